package draft

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
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
	"go.yaml.in/yaml/v3"
)

// maxWarnings bounds the document's flaws a draft lists one by one.
const maxWarnings = 20

// ErrRemoteRef refuses an external $ref to a URL when the network is not
// allowed (Options.RemoteRefs).
var ErrRemoteRef = errors.New("refers to a URL, and airlock init does not fetch the network unless told to (--remote-refs); download it and refer to the file instead")

// loadDocument reads an OpenAPI 3.0 or 3.1 document, or a Swagger 2.0 one
// converted to 3.0, with external $refs to files resolved against the
// document's own location. It refuses only a document that is not
// OpenAPI: every local flaw (a $ref where text belongs, an operation
// given by $ref, a dangling $ref, a tuple items, JSON Schema draft 3's
// required: true, a part kin-openapi cannot read) is mended or cut out and
// returned as a warning naming its location, as is every part that does
// not validate, and the draft is made of what can be read.
func loadDocument(doc []byte, opts Options) (*openapi3.T, []string, error) {
	tree, err := decodeTree(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("read the openapi document: it is neither YAML nor JSON: %w", err)
	}
	root, ok := tree.(map[string]any)
	if !ok {
		return nil, nil, errors.New("read the openapi document: it is not an object")
	}
	version := documentVersion(doc)
	switch {
	case version == "":
		return nil, nil, errors.New("read the openapi document: it names no version (neither openapi: 3.x nor swagger: \"2.0\")")
	case !strings.HasPrefix(version, "2.") && !strings.HasPrefix(version, "3."):
		return nil, nil, fmt.Errorf("read the openapi document: version %q is not one airlock reads (OpenAPI 3.0, 3.1, or Swagger 2.0)", version)
	}
	if strings.HasPrefix(version, "2.") {
		root["swagger"] = version
	} else {
		root["openapi"] = version
	}
	files := newFileSet(opts)
	m := &mender{root: root, read: files.read}
	if files.dir == "" {
		m.read = nil
	}
	m.mend()
	m.cutDangling(root, nil)
	warnings := m.warnings
	t, cut, err := loadMended(root, version, files)
	if err != nil {
		return nil, nil, err
	}
	warnings = append(warnings, files.warnings...)
	warnings = append(warnings, cut...)
	if strings.HasPrefix(version, "2.") {
		warnings = append(warnings, "a Swagger "+version+" document, converted to OpenAPI 3.0 (formData and collectionFormat become request bodies and styles)")
	}
	warnings = append(warnings, flaws(t)...)
	return t, warnings, nil
}

// maxLoads bounds the loads spent finding the parts kin-openapi cannot
// read.
const maxLoads = 48

// maxHalving bounds the time spent finding them.
const maxHalving = 20 * time.Second

// loadMended hands the mended tree to kin-openapi. When it still refuses
// it, the paths (then the schemas, responses, parameters) it cannot read
// are found by halving and left out, each named; a refusal that no part
// explains is the loader's error.
func loadMended(root map[string]any, version string, files *fileSet) (*openapi3.T, []string, error) {
	loads := 0
	deadline := time.Now().Add(maxHalving)
	try := func(r map[string]any) (*openapi3.T, error) {
		loads++
		return loadTree(r, version, files)
	}
	t, err := try(root)
	if err == nil {
		return t, nil, nil
	}
	if errors.Is(err, ErrRemoteRef) {
		return nil, nil, err
	}
	first := err
	var cut []string
	for _, section := range [][]string{{"paths"}, {"components", "schemas"}, {"definitions"}, {"components", "responses"}, {"components", "parameters"}, {"components", "requestBodies"}, {"parameters"}, {"responses"}} {
		parent := root
		for _, k := range section[:len(section)-1] {
			parent = asMap(parent[k])
		}
		key := section[len(section)-1]
		all := asMap(parent[key])
		if len(all) == 0 || loads >= maxLoads {
			continue
		}
		with := func(keys []string) map[string]any {
			sub := make(map[string]any, len(keys))
			for _, k := range keys {
				sub[k] = all[k]
			}
			r := maps.Clone(root)
			if len(section) == 1 {
				r[key] = sub
			} else {
				c := maps.Clone(asMap(r[section[0]]))
				c[key] = sub
				r[section[0]] = c
			}
			if section[0] != "paths" {
				r["paths"] = map[string]any{}
			}
			return r
		}
		if section[0] != "paths" {
			if _, err := try(with(nil)); err != nil {
				continue // the flaw is elsewhere
			}
		}
		var bad []string
		var halve func(keys []string)
		halve = func(keys []string) {
			if len(keys) == 0 || loads >= maxLoads || time.Now().After(deadline) {
				return
			}
			_, err := try(with(keys))
			switch {
			case err == nil:
				return
			case len(keys) == 1:
				bad = append(bad, keys[0])
				cut = append(cut, strings.Join(section, ".")+"."+keys[0]+": cannot be read ("+firstLine(err.Error())+"): left out")
				return
			}
			halve(keys[:len(keys)/2])
			halve(keys[len(keys)/2:])
		}
		halve(slices.Sorted(maps.Keys(all)))
		if len(bad) == 0 {
			continue
		}
		rest := maps.Clone(all)
		for _, k := range bad {
			delete(rest, k)
		}
		parent[key] = rest
		if t, err = try(root); err == nil {
			return t, cut, nil
		}
	}
	return nil, nil, fmt.Errorf("read the openapi document: %w", first)
}

// loadTree hands a mended tree to kin-openapi.
func loadTree(root map[string]any, version string, files *fileSet) (*openapi3.T, error) {
	b, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("encode the mended document: %w", err)
	}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = true
	loader.ReadFromURIFunc = files.readRef
	loader.Context = context.Background()
	location := files.location()
	if strings.HasPrefix(version, "2.") {
		var d2 openapi2.T
		if err := json.Unmarshal(b, &d2); err != nil {
			return nil, fmt.Errorf("read the swagger %s document: %w", version, err)
		}
		t, err := openapi2conv.ToV3WithLoader(&d2, loader, location)
		if err != nil {
			return nil, fmt.Errorf("convert the swagger %s document to openapi 3.0: %w", version, err)
		}
		return t, nil
	}
	return loader.LoadFromDataWithPath(b, location)
}

// fileSet reads the files a document's external $refs name, each mended
// as the root is, once.
type fileSet struct {
	opts     Options
	dir      string // the root document's directory ("" without a location)
	trees    map[string]map[string]any
	errs     map[string]error
	warnings []string
}

func newFileSet(opts Options) *fileSet {
	fs := &fileSet{opts: opts, trees: map[string]map[string]any{}, errs: map[string]error{}}
	if opts.Location != "" {
		if abs, err := filepath.Abs(opts.Location); err == nil {
			fs.dir = filepath.Dir(abs)
		}
	}
	return fs
}

// location is the root document's URL for kin-openapi.
func (fs *fileSet) location() *url.URL {
	if fs.dir == "" {
		return &url.URL{Path: "openapi.yaml"}
	}
	return &url.URL{Path: filepath.ToSlash(filepath.Join(fs.dir, filepath.Base(fs.opts.Location)))}
}

// read reads a file by its path relative to the root's directory, mended.
func (fs *fileSet) read(rel string) (map[string]any, error) {
	if t, ok := fs.trees[rel]; ok {
		return t, nil
	}
	if err, ok := fs.errs[rel]; ok {
		return nil, err
	}
	t, err := fs.readFile(rel)
	if err != nil {
		fs.errs[rel] = err
		return nil, err
	}
	return t, nil
}

func (fs *fileSet) readFile(rel string) (map[string]any, error) {
	if fs.dir == "" {
		return nil, fmt.Errorf("external reference %q: the document was given without a location to resolve it from", rel)
	}
	b, err := os.ReadFile(filepath.Join(fs.dir, filepath.FromSlash(rel)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no file %s next to the document", rel)
	}
	if err != nil {
		return nil, fmt.Errorf("external reference %s: %w", rel, err)
	}
	tree, err := decodeTree(b)
	if err != nil {
		return nil, fmt.Errorf("external reference %q is neither YAML nor JSON: %w", rel, err)
	}
	obj, ok := tree.(map[string]any)
	if !ok {
		obj = map[string]any{}
	}
	fs.trees[rel] = obj // before mending: a file may refer to itself
	m := &mender{file: rel, root: obj, read: fs.read}
	m.mend()
	m.cutDangling(obj, nil)
	fs.warnings = append(fs.warnings, m.warnings...)
	return obj, nil
}

// readRef is kin-openapi's reader of external $refs: a file is read
// mended (relative refs resolve against the document's location), a URL
// only when opts.RemoteRefs allows it.
func (fs *fileSet) readRef(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
	switch u.Scheme {
	case "":
		if fs.dir == "" {
			return nil, fmt.Errorf("external reference %q: the document was given without a location to resolve it from", u.Path)
		}
		rel, err := filepath.Rel(fs.dir, filepath.FromSlash(u.Path))
		if err != nil || strings.HasPrefix(rel, "..") {
			b, err := os.ReadFile(filepath.FromSlash(u.Path))
			if err != nil {
				return nil, fmt.Errorf("external reference: %w", err)
			}
			return b, nil
		}
		t, err := fs.read(filepath.ToSlash(rel))
		if err != nil {
			return nil, err
		}
		return json.Marshal(t)
	case "http", "https":
		if !fs.opts.RemoteRefs {
			return nil, fmt.Errorf("external reference %s %w", u.Redacted(), ErrRemoteRef)
		}
		return fetchRef(u)
	}
	return nil, fmt.Errorf("external reference %s: scheme %q is not read", u.Redacted(), u.Scheme)
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
