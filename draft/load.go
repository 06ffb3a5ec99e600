package draft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"gopkg.in/yaml.v3"
)

// maxWarnings bounds the document's flaws a draft lists one by one.
const maxWarnings = 20

// ErrRemoteRef refuses an external $ref to a URL when the network is not
// allowed (Options.RemoteRefs).
var ErrRemoteRef = errors.New("refers to a URL, and airlock init does not fetch the network unless told to (--remote-refs); download it and refer to the file instead")

// loadDocument reads an OpenAPI 3.0 or 3.1 document, or a Swagger 2.0 one
// converted to 3.0, with external $refs to files resolved against the
// document's own location. It does not refuse a document whose flaws
// (conflicting paths, a schema that does not validate) leave it readable:
// each flaw is returned as a warning, and the draft is made of what can be
// read.
func loadDocument(doc []byte, opts Options) (*openapi3.T, []string, error) {
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = true
	loader.ReadFromURIFunc = readRef(opts)
	loader.Context = context.Background()
	location := &url.URL{Path: "openapi.yaml"}
	if opts.Location != "" {
		if abs, err := filepath.Abs(opts.Location); err == nil {
			location = &url.URL{Path: filepath.ToSlash(abs)}
		}
	}
	var warnings []string
	var t *openapi3.T
	switch version := documentVersion(doc); {
	case strings.HasPrefix(version, "2."):
		var d2 openapi2.T
		if err := openapi2.UnmarshalFromData(doc, &d2); err != nil {
			return nil, nil, fmt.Errorf("read the swagger %s document: %w", version, err)
		}
		converted, err := openapi2conv.ToV3WithLoader(&d2, loader, location)
		if err != nil {
			return nil, nil, fmt.Errorf("convert the swagger %s document to openapi 3.0: %w", version, err)
		}
		t = converted
		warnings = append(warnings, "a Swagger "+version+" document, converted to OpenAPI 3.0 (formData and collectionFormat become request bodies and styles)")
	case strings.HasPrefix(version, "3."):
		loaded, err := loader.LoadFromDataWithPath(doc, location)
		if err != nil {
			return nil, nil, fmt.Errorf("read the openapi document: %w", err)
		}
		t = loaded
	case version == "":
		return nil, nil, errors.New("read the openapi document: it names no version (neither openapi: 3.x nor swagger: \"2.0\")")
	default:
		return nil, nil, fmt.Errorf("read the openapi document: version %q is not one airlock reads (OpenAPI 3.0, 3.1, or Swagger 2.0)", version)
	}
	warnings = append(warnings, flaws(t)...)
	return t, warnings, nil
}

// readRef reads an external $ref: a file (relative refs resolve against
// the document's location), or a URL only when opts.RemoteRefs allows it.
func readRef(opts Options) openapi3.ReadFromURIFunc {
	return func(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
		switch u.Scheme {
		case "":
			if opts.Location == "" {
				return nil, fmt.Errorf("external reference %q: the document was given without a location to resolve it from", u.Path)
			}
			b, err := os.ReadFile(filepath.FromSlash(u.Path))
			if err != nil {
				return nil, fmt.Errorf("external reference: %w", err)
			}
			return b, nil
		case "http", "https":
			if !opts.RemoteRefs {
				return nil, fmt.Errorf("external reference %s %w", u.Redacted(), ErrRemoteRef)
			}
			return fetchRef(u)
		}
		return nil, fmt.Errorf("external reference %s: scheme %q is not read", u.Redacted(), u.Scheme)
	}
}

var (
	jsonVersion = regexp.MustCompile(`"(openapi|swagger)"\s*:\s*"([^"]*)"`)
	yamlVersion = regexp.MustCompile(`(?m)^(openapi|swagger)\s*:\s*['"]?([0-9][0-9.]*)`)
)

// documentVersion is the document's openapi or swagger version ("" when
// it names none). It is read from the text, not by decoding the whole
// document a second time: GitHub's is 13 MB.
func documentVersion(doc []byte) string {
	re := yamlVersion
	if bytes.HasPrefix(bytes.TrimLeft(doc, " \t\r\n"), []byte("{")) {
		re = jsonVersion
	}
	if m := re.FindSubmatch(doc); m != nil {
		return string(m[2])
	}
	var head struct {
		OpenAPI string `yaml:"openapi"`
		Swagger string `yaml:"swagger"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return ""
	}
	if head.OpenAPI != "" {
		return head.OpenAPI
	}
	return head.Swagger
}

// flaws lists every part of a document that does not validate, one flaw
// each. Nothing is dropped: a draft keeps what can be read, and the user
// picks resources.
func flaws(t *openapi3.T) []string {
	err := t.Validate(context.Background(), openapi3.DisableExamplesValidation(), openapi3.EnableMultiError())
	if err == nil {
		return nil
	}
	var out []string
	var walk func(err error)
	walk = func(err error) {
		var me openapi3.MultiError
		if errors.As(err, &me) {
			for _, e := range me {
				walk(e)
			}
			return
		}
		out = append(out, firstLine(err.Error()))
	}
	walk(err)
	sort.Strings(out)
	return slices.Compact(out)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
}

// maxRefBody bounds a document fetched for an external $ref.
const maxRefBody = 64 << 20

// fetchRef reads an external $ref's URL, bounded in time and size.
func fetchRef(u *url.URL) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("external reference %s: %w", u.Redacted(), err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("external reference %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("external reference %s: the server answered %d", u.Redacted(), resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRefBody+1))
	if err != nil {
		return nil, fmt.Errorf("external reference %s: %w", u.Redacted(), err)
	}
	if len(b) > maxRefBody {
		return nil, fmt.Errorf("external reference %s: larger than %d bytes", u.Redacted(), maxRefBody)
	}
	return b, nil
}
