package envelope

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ProblemTypeBase prefixes a problem's type URI: urn:airlock:problem:
// followed by the code in lower case, which is also the code's heading in
// docs/errors.md. The type is an identifier, not a link: it names the
// problem the same way wherever airlock is installed from, and sends no
// reader to a page that may not exist.
const ProblemTypeBase = "urn:airlock:problem:"

// State changed values, on problems about writes.
const (
	StateNone    = "none"
	StatePartial = "partial"
	StateUnknown = "unknown"
)

// maxFieldErrors caps errors[] so that a problem stays a few hundred tokens.
const maxFieldErrors = 20

// Problem is an RFC 9457 problem with airlock's extension members. Build it
// with NewProblem so that title, status, retryable and next_action come from
// the registry.
type Problem struct {
	Type              string       `json:"type"`
	Title             string       `json:"title"`
	Status            int          `json:"status"`
	Detail            string       `json:"detail"`
	Instance          string       `json:"instance,omitempty"`
	Code              ProblemCode  `json:"code"`
	Retryable         bool         `json:"retryable"`
	RetryAfterSeconds *int         `json:"retry_after_seconds,omitempty"`
	NextAction        string       `json:"next_action"`
	RequestID         string       `json:"request_id,omitempty"`
	Errors            []FieldError `json:"errors,omitempty"`
	StateChanged      string       `json:"state_changed,omitempty"`
	// RememberedUntil is set when airlock answered from memory, without
	// calling the upstream: an identical call before this time (RFC 3339)
	// gets the same answer.
	RememberedUntil string `json:"remembered_until,omitempty"`
	// UpstreamMessage quotes what the upstream itself said about the
	// failure (see QuoteUpstream): the API's words, data and never an
	// instruction.
	UpstreamMessage string `json:"upstream_message,omitempty"`
}

// FieldError names one invalid field. Field is a dotted path into the
// arguments; Code is a registered field-error code; Example is a valid value.
type FieldError struct {
	Field   string    `json:"field"`
	Code    FieldCode `json:"code"`
	Message string    `json:"message"`
	Example any       `json:"example,omitempty"`
}

// NewProblem returns the registered problem for code, with the detail given.
// detail must be built by the caller from fixed text and sanitized names only.
func NewProblem(code ProblemCode, detail string) *Problem {
	c := mustLookup(code)
	if detail == "" {
		detail = strings.ToUpper(c.Meaning[:1]) + c.Meaning[1:] + "."
	}
	p := &Problem{
		Type:       ProblemTypeBase + strings.ToLower(string(code)),
		Title:      c.Title,
		Status:     c.Status,
		Detail:     truncate(detail, 400),
		Code:       code,
		Retryable:  c.Retryable,
		NextAction: renderNextAction(c.NextAction, DefaultRetryAfter),
	}
	if strings.Contains(c.NextAction, "{retry_after_seconds}") {
		p.RetryAfterSeconds = Ptr(DefaultRetryAfter)
	}
	return p
}

// DefaultRetryAfter is the wait next_action names when the upstream gave
// none.
const DefaultRetryAfter = 10

// SetRetryAfter sets retry_after_seconds and renders it into next_action,
// whose template may say {retry_after_seconds}.
func (p *Problem) SetRetryAfter(secs int) *Problem {
	secs = max(secs, 1)
	p.RetryAfterSeconds = &secs
	p.NextAction = renderNextAction(mustLookup(p.Code).NextAction, secs)
	return p
}

// renderNextAction fills a template's only placeholder with a number
// airlock computed; without one it uses a default wait.
func renderNextAction(tmpl string, secs int) string {
	return strings.ReplaceAll(tmpl, "{retry_after_seconds}", fmt.Sprint(secs))
}

// WithRequest sets the request id and the instance URI derived from it.
func (p *Problem) WithRequest(requestID string) *Problem {
	p.RequestID = requestID
	if requestID != "" {
		p.Instance = "urn:uuid:" + requestID
	}
	return p
}

// NewFieldError returns a field error with the code's fixed message.
func NewFieldError(field string, code FieldCode, example any) FieldError {
	return FieldError{Field: SafeName(field), Code: code, Message: mustLookup(code).Message, Example: example}
}

// InvalidArguments builds the INVALID_ARGUMENTS problem listing every error
// (up to maxFieldErrors of them; the detail says how many there are).
func InvalidArguments(errs []FieldError) *Problem {
	names := make([]string, 0, min(len(errs), maxFieldErrors))
	for _, e := range errs[:min(len(errs), maxFieldErrors)] {
		names = append(names, e.Field)
	}
	detail := fmt.Sprintf("%d argument(s) are invalid: %s.", len(errs), strings.Join(names, ", "))
	if len(errs) == 1 {
		detail = fmt.Sprintf("The argument %s is invalid: %s.", errs[0].Field, errs[0].Message)
	}
	p := NewProblem(ProblemInvalidArguments, detail)
	p.SetErrors(errs)
	return p
}

// SetErrors sets errors[], keeping the first maxFieldErrors so that a
// problem stays a few hundred tokens whatever produced the list (an
// upstream may reject hundreds of fields at once); when it cuts, the
// detail says how many there were.
func (p *Problem) SetErrors(errs []FieldError) {
	if len(errs) > maxFieldErrors {
		p.Detail = strings.TrimSpace(p.Detail + fmt.Sprintf(" The first %d of %d invalid fields are listed.", maxFieldErrors, len(errs)))
		errs = errs[:maxFieldErrors]
	}
	p.Errors = errs
}

// SafeName reduces a caller-supplied name (a field path, a filter key) to a
// short string of safe characters so that it can be named in a problem
// without carrying instructions or markup.
func SafeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 {
			b.WriteString("…")
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9',
			r == '_', r == '.', r == '-', r == '[', r == ']', r == '/', r == '+':
			b.WriteRune(r)
		default:
			b.WriteRune('?')
		}
	}
	return b.String()
}

// MaxUpstreamMessage bounds a quoted upstream message, in bytes.
const MaxUpstreamMessage = 300

// QuoteUpstream prepares text an upstream API wrote (an error message) to
// be quoted in upstream_message: control characters and runs of white
// space become one space, invalid UTF-8 is dropped, and the result is cut
// to MaxUpstreamMessage bytes at a rune boundary. The words are kept as
// the API wrote them; the member's schema marks them as the API's text.
// Credentials are removed later, with everything else that leaves
// airlock, by the Redactor.
func QuoteUpstream(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			continue
		case unicode.IsSpace(r) || unicode.IsControl(r):
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		if b.Len()+utf8.RuneLen(r) > MaxUpstreamMessage {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Marshal serializes the problem as it leaves airlock: I-JSON (see
// IJSON), as Envelope.Marshal.
func (p *Problem) Marshal() []byte {
	b, _ := json.Marshal(p)
	return IJSON(b)
}
