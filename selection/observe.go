package selection

import "time"

// Observer receives what the commit engine does, for metrics. Its methods
// are called on the engine's hot paths: they must be fast, never block and
// be safe for concurrent use. They are given no ids: what they count must
// stay within fixed sets of values.
type Observer interface {
	// Journaled is called after each write of the journal: the entries it
	// wrote (each target's new outcome), how long the store took, and the
	// store's error (the entries were then not written).
	Journaled(entries []Target, took time.Duration, err error)
	// TookOver is called when this engine took over an operation whose
	// lease had expired.
	TookOver()
	// Decided is called when a person's decision about a selection is
	// recorded: its channel (client, operator), the decision, and how long
	// the selection waited for it since its preview.
	Decided(channel, decision string, waited time.Duration)
}

func (e *Engine) journaled(entries []Target, took time.Duration, err error) {
	if e.Observer != nil {
		e.Observer.Journaled(entries, took, err)
	}
}
