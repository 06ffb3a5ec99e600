package selection

// Exported for the external tests that need a real store (the stores
// import this package).
var (
	Streamable   = streamable
	AppendRecord = appendRecord
)
