package redact_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/redact"
	"github.com/airlock-mcp/airlock/redact/leaktest"
)

const secret = "cnry-3f9a1c7e-demo-credential"

// echoes are the ways upstreams have been seen to echo a credential back.
func echoes(s string) map[string]string {
	b64 := func(enc *base64.Encoding, v string) string { return enc.EncodeToString([]byte(v)) }
	return map[string]string{
		"raw":                     s,
		"bearer header":           "Bearer " + s,
		"basic password":          "Basic " + b64(base64.StdEncoding, "svc-user:"+s),
		"basic, url alphabet":     "Basic " + b64(base64.URLEncoding, "svc:"+s),
		"base64 std":              b64(base64.StdEncoding, s),
		"base64 std, offset 1":    b64(base64.StdEncoding, "x"+s),
		"base64 std, offset 2":    b64(base64.StdEncoding, "xy"+s),
		"base64 url, no padding":  b64(base64.RawURLEncoding, s),
		"base64 of a json object": b64(base64.StdEncoding, `{"authorization":"Bearer `+s+`"}`),
		"query escaped":           url.QueryEscape("Bearer " + s),
		"every byte escaped":      "%42earer%20" + strings.ReplaceAll(s, "-", "%2D"),
		"lower-case escapes":      strings.ReplaceAll(s, "-", "%2d"),
		"dots":                    strings.ReplaceAll(s, "-", "."),
		"spaces":                  strings.ReplaceAll(s, "-", " "),
		"underscores":             strings.ReplaceAll(s, "-", "_"),
		"slashes":                 strings.ReplaceAll(s, "-", "/"),
		"no separators":           strings.ReplaceAll(s, "-", ""),
		"safe-name form":          strings.ReplaceAll("Bearer "+s, " ", "?"),
		"json unicode escape":     strings.ReplaceAll(s, "-", `\u002d`),
		"inside a path":           "body.credentials." + s + ".value",
	}
}

// TestRedactor_RemovesTheSecretInEveryEchoedEncoding: whatever encoding an
// upstream echoes the credential in, what airlock passes on holds no trace
// a reader could decode, and the JSON around it stays valid.
//
// The second secret's longest run is as long as the forms the redactor
// finds in one pass: its split echoes are found through that run.
func TestRedactor_RemovesTheSecretInEveryEchoedEncoding(t *testing.T) {
	for _, secret := range []string{secret, "cnry-3f9a1c7e5b2d8f4a6c0e-credential"} {
		r := redact.New("Bearer "+secret, secret)
		for name, echo := range echoes(secret) {
			t.Run(secret+"/"+name, func(t *testing.T) {
				doc, _ := json.Marshal(map[string]any{"problem": map[string]any{"errors": []any{map[string]any{"field": "upstream." + echo}}}, "text": "the value " + echo + " was refused"})
				if hits := leaktest.Hits(doc, secret); len(hits) == 0 {
					t.Fatalf("the check itself cannot see the echo %q", echo)
				}
				out := r.Bytes(doc)
				if hits := leaktest.Hits(out, secret); len(hits) > 0 {
					t.Fatalf("still readable (%v) after redaction: %s", hits, out)
				}
				if !json.Valid(out) {
					t.Fatalf("redaction broke the JSON: %s", out)
				}
				if !strings.Contains(string(out), redact.Redacted) {
					t.Fatalf("no marker: %s", out)
				}
			})
		}
	}
}

// b64Key is a key with the characters keys made of base64 have, which a
// query escapes (%2B, %2F, %3D); tildeKey's own base64 holds + and /,
// which a URL escapes inside the very run that encodes it.
const (
	b64Key   = "k9Rz+Qw/7xTf2Lm0=Vb8nC4j"
	tildeKey = "tk~7f>3a?9e~c>d1?b"
)

// nestedEchoes are containers nested in each other that hold s: base64 of
// a query (or a JSON document, or base64) holding s escaped, in either
// alphabet, padded or not, at any offset, percent-escaped in a URL inside
// a JSON document.
func nestedEchoes(s string) map[string]string {
	std, rawURL := base64.StdEncoding.EncodeToString, base64.RawURLEncoding.EncodeToString
	query := "api_key=" + url.QueryEscape(s) + "&page=2&after=~~~???"
	goJSON, _ := json.Marshal(s)
	// PHP escapes /; .NET's default encoder +, <, >, &, ' and ` in upper
	// case hex; some encoders every punctuation byte.
	php := strings.ReplaceAll(s, "/", `\/`)
	dotnet := strings.NewReplacer("+", `\u002B`, "<", `\u003C`, ">", `\u003E`, "&", `\u0026`, "'", `\u0027`, "`", `\u0060`).Replace(s)
	every := strings.NewReplacer("+", `\u002b`, "/", `\u002f`, "=", `\u003d`, "~", `\u007e`, ">", `\u003e`, "?", `\u003f`, "-", `\u002d`).Replace(s)
	link := func(c string) string { return "https://api.example.com/v1/items?cursor=" + url.QueryEscape(c) }
	out := map[string]string{
		"base64 of the query":                      std([]byte(query)),
		"base64 of the query, url alphabet, +1":    rawURL([]byte("&" + query)),
		"base64 of the query, url alphabet, +2":    base64.URLEncoding.EncodeToString([]byte("&&" + query)),
		"base64 of a path-escaped key":             std([]byte("k=" + url.PathEscape(s) + ";")),
		"base64 of every byte escaped":             std([]byte("k=" + strings.NewReplacer("+", "%2b", "/", "%2f", "=", "%3d", "~", "%7e", ">", "%3e", "?", "%3f", "-", "%2d").Replace(s))),
		"base64 of a JSON document":                std([]byte(`{"q":{"key":` + string(goJSON) + `},"n":2}`)),
		"base64 of a PHP JSON document":            std([]byte(`{"q":{"key":"` + php + `"},"n":2}`)),
		"base64 of a .NET JSON document":           rawURL([]byte(`{"q":{"key":"` + dotnet + `"},"n":2}`)),
		"base64 of a JSON document escaping all":   std([]byte(`{"q":{"key":"` + every + `"}}`)),
		"base64 inside base64":                     std([]byte(`{"next":"` + std([]byte("p=1&api_key="+s)) + `"}`)),
		"base64 inside base64, url alphabets, +1":  rawURL([]byte("x" + rawURL([]byte("yz"+query)))),
		"base64 of an escaped base64 cursor":       std([]byte("cursor=" + url.QueryEscape(std([]byte(query))) + "&x=1")),
		"escaped base64 in a next link":            link(std([]byte(query))),
		"escaped base64 inside base64 in a link":   link(std([]byte("c=" + url.QueryEscape(std([]byte(query)))))),
		"base64 of the key, run escaped by a URL":  url.QueryEscape(std([]byte("??" + s + "~~"))),
		"base64 of the key, only slashes escaped":  url.PathEscape(std([]byte("?" + s))),
		"base64 of the key in JSON, slash escaped": strings.ReplaceAll(std([]byte(s+"~")), "/", `\/`),
	}
	return out
}

// TestRedactor_RemovesTheSecretInsideNestedContainers: a key inside
// containers nested in each other (a cursor that is base64 of the request's
// own query, the key percent-escaped in it, itself escaped in a next link;
// base64 inside base64; a base64 run a URL broke with %2B, %2F and %3D) is
// found and removed: what remains decodes to no trace of it, and a JSON
// document stays valid.
func TestRedactor_RemovesTheSecretInsideNestedContainers(t *testing.T) {
	for _, key := range []string{b64Key, tildeKey, secret} {
		r := redact.New(key, "Bearer "+key)
		for name, echo := range nestedEchoes(key) {
			t.Run(key+"/"+name, func(t *testing.T) {
				for _, doc := range [][]byte{
					[]byte(echo),
					[]byte(`{"next":"` + echo + `","items":[{"id":"a","cursor":"x` + echo + `"}]}`),
					[]byte("GET /v1/items?page=3&cursor=" + echo + "&limit=100"),
				} {
					if hits := leaktest.Hits(doc, key); len(hits) == 0 {
						t.Fatalf("the check itself cannot see the key in %s", doc)
					}
					out := r.Bytes(doc)
					if hits := leaktest.Hits(out, key); len(hits) > 0 {
						t.Fatalf("still readable (%v) after redaction:\n%s\n%s", hits, doc, out)
					}
					if json.Valid(doc) && !json.Valid(out) {
						t.Fatalf("redaction broke the JSON: %s", out)
					}
					if r.String(string(doc)) != string(out) {
						t.Fatal("String and Bytes disagree")
					}
				}
			})
		}
	}
}

// TestRedactor_LeavesNestedContainersWithoutTheSecretUntouched: the same
// containers around another key are not changed (nor copied).
func TestRedactor_LeavesNestedContainersWithoutTheSecretUntouched(t *testing.T) {
	r := redact.New(b64Key, tildeKey, secret)
	for name, echo := range nestedEchoes("Zq7+Yp2/unrelated=key~4d2f") {
		in := []byte(echo)
		if out := r.Bytes(in); &out[0] != &in[0] || r.MayContain(echo) {
			t.Fatalf("%s: changed or suspected: %s", name, out)
		}
	}
}

// TestRedactor_LeavesCleanTextUntouched: text without a secret comes back
// as the same bytes (no copy), and near misses are kept.
func TestRedactor_LeavesCleanTextUntouched(t *testing.T) {
	r := redact.New(secret)
	for _, s := range []string{`{"items":[{"id":"sa_00002","name":"metrics-exporter-865"}]}`, "cnry-3f9a", "credential", "demo-credential", ""} {
		in := []byte(s)
		out := r.Bytes(in)
		if string(out) != s {
			t.Fatalf("%q became %q", s, out)
		}
		if len(in) > 0 && &out[0] != &in[0] {
			t.Fatalf("%q was copied", s)
		}
	}
	var nilR *redact.Redactor
	if got := nilR.String("x " + secret); got != "x "+secret || !nilR.Empty() {
		t.Fatal("a nil redactor redacts nothing")
	}
	if redact.New("abc").Empty() != true {
		t.Fatal("a secret under four bytes is ignored")
	}
}

// TestRedactor_LogRecordsAndWritersAreRedacted: a log record's message and
// attributes of every kind, and each write to a wrapped writer, lose the
// secret; a secret added after the logger was built is redacted too.
func TestRedactor_LogRecordsAndWritersAreRedacted(t *testing.T) {
	r := redact.New()
	var buf bytes.Buffer
	log := slog.New(r.Handler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	r.Add(secret)
	log.Debug("upstream said "+secret, "field", "upstream."+secret, "err", fmt.Errorf("status 422: %s", secret),
		slog.Group("req", "url", "https://api.example.com/v1?next="+url.QueryEscape(secret)))
	log.With("token", secret).Info("with attrs")
	var w bytes.Buffer
	fmt.Fprintf(r.Writer(&w), "line %s\n", base64.StdEncoding.EncodeToString([]byte("u:"+secret)))
	for what, b := range map[string][]byte{"log": buf.Bytes(), "writer": w.Bytes()} {
		if hits := leaktest.Hits(b, secret); len(hits) > 0 {
			t.Fatalf("%s: the secret is readable (%v): %s", what, hits, b)
		}
		if !bytes.Contains(b, []byte(redact.Redacted)) {
			t.Fatalf("%s: nothing was redacted: %s", what, b)
		}
	}
}

// BenchmarkRedactor measures the redaction of a 32 KB tool result with
// nothing to redact (the common case) and with one echo, against the cost
// of marshaling that result.
func BenchmarkRedactor(b *testing.B) {
	items := make([]any, 0, 200)
	for i := range 200 {
		items = append(items, map[string]any{"id": fmt.Sprintf("sub_%05d", i), "customer_name": fmt.Sprintf("Customer %d GmbH", i),
			"region": "eu", "status": "past_due", "amount_due": 1000 + i, "currency": "eur", "tags": []any{"disputed", "legal_hold"}})
	}
	env := &envelope.Envelope{Data: map[string]any{"items": items}}
	env.Finish()
	clean := env.Marshal()
	for len(clean) < 32<<10 {
		env.Data.(map[string]any)["items"] = append(env.Data.(map[string]any)["items"].([]any), items[:10]...)
		clean = env.Marshal()
	}
	dirty := bytes.Replace(clean, []byte("Customer 7 GmbH"), []byte("Customer "+secret), 1)
	r := redact.New("Bearer "+secret, secret, "cnry-b81d04aa-admin-credential")
	b.Run("marshal", func(b *testing.B) {
		b.SetBytes(int64(len(clean)))
		for b.Loop() {
			env.Marshal()
		}
	})
	b.Run("clean", func(b *testing.B) {
		b.SetBytes(int64(len(clean)))
		for b.Loop() {
			r.Bytes(clean)
		}
	})
	b.Run("one_echo", func(b *testing.B) {
		b.SetBytes(int64(len(dirty)))
		for b.Loop() {
			r.Bytes(dirty)
		}
	})
	// The secret in a next link whose cursor is base64 of the query that
	// holds it percent-escaped.
	cursor := url.QueryEscape(base64.StdEncoding.EncodeToString([]byte("api_key=" + url.QueryEscape(secret) + "&page=2&after=~~~???")))
	nested := bytes.Replace(clean, []byte("Customer 7 GmbH"), []byte("https://api.example.com/v1/items?cursor="+cursor), 1)
	b.Run("nested_echo", func(b *testing.B) {
		b.SetBytes(int64(len(nested)))
		for b.Loop() {
			r.Bytes(nested)
		}
	})
	// What adding a renewed access token costs a redactor that already
	// holds a hundred.
	var held []string
	for i := range 100 {
		held = append(held, fmt.Sprintf("cnry-%08x-access-token", i))
	}
	b.Run("add_to_100", func(b *testing.B) {
		i := 0
		for b.Loop() {
			b.StopTimer()
			many := redact.New(held...)
			i++
			b.StartTimer()
			many.Add(fmt.Sprintf("cnry-%08x-renewed-token", i))
		}
	})
}

// TestRedactor_KeepsJSONValid: a secret found outside a string (a bare
// token) is replaced by a quoted marker, and one that starts or ends inside
// an escape takes the whole escape with it: the document stays JSON.
func TestRedactor_KeepsJSONValid(t *testing.T) {
	r := redact.New("u0041bc123xyz", "9f8e7d6c5b4a")
	for _, doc := range []string{
		`{"n":9f8e7d6c5b4a}`,
		`[19f8e7d6c5b4a0, "9f8e7d6c5b4a"]`,
		`{"s":"x\u0041bc123xyz"}`,
		`{"s":"\\u0041bc123xyz\\"}`,
	} {
		out := r.Bytes([]byte(doc))
		if strings.Contains(string(out), "9f8e7d6c5b4a") || strings.Contains(string(out), "bc123xyz") {
			t.Fatalf("%s: the secret survived: %s", doc, out)
		}
		var v any
		if strings.HasPrefix(doc, `{"s"`) && !json.Valid(out) {
			t.Fatalf("%s: no longer JSON: %s", doc, out)
		}
		if json.Valid([]byte(doc)) && json.Unmarshal(out, &v) != nil {
			t.Fatalf("%s: no longer JSON: %s", doc, out)
		}
	}
}
