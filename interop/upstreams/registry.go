package upstreams

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// registryBin is where Debian's docker-registry package installs the
// server.
const registryBin = "/usr/bin/docker-registry"

// RegistryRepositories is how many repositories StartRegistry pushes.
const RegistryRepositories = 300

// Registry is a running docker-registry (Debian's 2.8.2) with filesystem
// storage in the test's temp dir and no auth. Its catalog, /v2/_catalog,
// pages with ?n= and a Link header (<...?last=X&n=N>; rel="next") and
// answers {"repositories": [...]} of plain strings.
type Registry struct {
	URL string
	// Pushed are the repositories the harness pushed, sorted.
	Pushed []string
	// auth is the Basic credential the harness sends (nil without auth).
	auth http.Header
}

// RegistryBasic is the htpasswd Basic authentication a registry may
// require: a user, its password, and the password's bcrypt hash as
// htpasswd holds it.
type RegistryBasic struct {
	User, Password, Hash string
}

// StartRegistry starts docker-registry on a free loopback port and pushes
// RegistryRepositories repositories, each holding the same one-layer
// schema2 image tagged latest. It stops the registry when the test ends.
func StartRegistry(t testing.TB) *Registry { return startRegistry(t, nil) }

// StartRegistryWithBasic is StartRegistry with htpasswd Basic
// authentication: every request, the harness's too, needs the user and
// its password.
func StartRegistryWithBasic(t testing.TB, basic RegistryBasic) *Registry {
	return startRegistry(t, &basic)
}

func startRegistry(t testing.TB, basic *RegistryBasic) *Registry {
	t.Helper()
	Enabled(t)
	if _, err := os.Stat(registryBin); err != nil {
		missing(t, "%s is missing; apt-get install docker-registry", registryBin)
	}
	started := time.Now()
	dir := t.TempDir()
	storage := filepath.Join(dir, "storage")
	var auth http.Header
	ready := answersOK("/v2/")
	extra := ""
	if basic != nil {
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(basic.User+":"+basic.Hash+"\n"), 0o600); err != nil {
			t.Fatalf("write htpasswd: %v", err)
		}
		extra = fmt.Sprintf("auth:\n  htpasswd:\n    realm: airlock-interop\n    path: %s\n", htpasswd)
		auth = http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(basic.User+":"+basic.Password))}}
		// Without the credential the registry answers 401: that is ready.
		ready = func(ctx context.Context, base string) bool {
			_, _, err := call(ctx, http.MethodGet, base+"/v2/", auth, nil, http.StatusOK)
			return err == nil
		}
	}
	base, _ := startProcess(t, "docker-registry", dir, func(port int) []string {
		cfg := filepath.Join(dir, fmt.Sprintf("config-%d.yml", port))
		if err := os.WriteFile(cfg, []byte(registryConfig(storage, port)+extra), 0o600); err != nil {
			t.Fatalf("write the registry config: %v", err)
		}
		return []string{registryBin, "serve", cfg}
	}, ready)
	r := &Registry{URL: base, Pushed: repositoryNames(RegistryRepositories), auth: auth}
	if err := r.push(t, r.Pushed[0], ""); err != nil {
		t.Fatalf("push to the registry: %v", err)
	}
	if err := parallel(len(r.Pushed)-1, 8, func(i int) error { return r.push(t, r.Pushed[i+1], r.Pushed[0]) }); err != nil {
		t.Fatalf("push to the registry: %v", err)
	}
	if got := r.Repositories(t); strings.Join(got, "\n") != strings.Join(r.Pushed, "\n") {
		t.Fatalf("the registry's catalog lists %d repositories, %d were pushed", len(got), len(r.Pushed))
	}
	t.Logf("docker-registry 2.8.2: started and pushed %d repositories in %.1fs at %s", len(r.Pushed), time.Since(started).Seconds(), base)
	return r
}

// registryConfig is a registry with filesystem storage, no auth, listening
// on 127.0.0.1:port. A fixed http.secret keeps it from warning about a
// generated one.
func registryConfig(storage string, port int) string {
	return fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: 127.0.0.1:%d
  secret: airlock-interop-registry
`, storage, port)
}

// repositoryNames are n names in a few namespaces and depths, sorted as
// the catalog sorts them.
func repositoryNames(n int) []string {
	spaces := []string{"apps", "infra/db", "library", "ml/models", "platform/tools/ci", "team-payments"}
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, fmt.Sprintf("%s/svc-%03d", spaces[i%len(spaces)], i))
	}
	sort.Strings(out)
	return out
}

// image is the one tiny image every repository holds: a config blob and a
// layer blob, both pushed to the first repository and mounted from there
// into the others (as docker push does across repositories).
var image = struct{ config, layer []byte }{
	config: []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`),
	layer:  []byte("airlock interop layer"),
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// push puts the image's blobs into repo (mounted from the first
// repository when from is set, else uploaded) and a schema2 manifest tagged
// latest.
func (r *Registry) push(t testing.TB, repo, from string) error {
	for _, blob := range [][]byte{image.config, image.layer} {
		if err := r.putBlob(t, repo, from, blob); err != nil {
			return err
		}
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.docker.distribution.manifest.v2+json",
		"config": map[string]any{"mediaType": "application/vnd.docker.container.image.v1+json",
			"size": len(image.config), "digest": digestOf(image.config)},
		"layers": []any{map[string]any{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
			"size": len(image.layer), "digest": digestOf(image.layer)}},
	})
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	h := r.header(http.Header{"Content-Type": {"application/vnd.docker.distribution.manifest.v2+json"}})
	_, _, err = call(t.Context(), http.MethodPut, r.URL+"/v2/"+repo+"/manifests/latest", h, manifest, http.StatusCreated)
	return err
}

// putBlob mounts the blob from another repository (201), or, when the
// registry starts an upload instead (202), completes it monolithically: the
// whole blob in one PUT to the upload's Location.
func (r *Registry) putBlob(t testing.TB, repo, from string, blob []byte) error {
	digest := digestOf(blob)
	start := r.URL + "/v2/" + repo + "/blobs/uploads/"
	if from != "" {
		start += "?" + url.Values{"mount": {digest}, "from": {from}}.Encode()
	}
	hdr, _, err := call(t.Context(), http.MethodPost, start, r.header(nil), nil, http.StatusAccepted)
	if from != "" && isHTTPStatus(err, http.StatusCreated) {
		return nil // mounted
	}
	if err != nil {
		return err
	}
	loc, err := url.Parse(hdr.Get("Location"))
	if err != nil || hdr.Get("Location") == "" {
		return fmt.Errorf("upload to %q: no usable Location", repo)
	}
	loc = mustParse(r.URL).ResolveReference(loc)
	q := loc.Query()
	q.Set("digest", digest)
	loc.RawQuery = q.Encode()
	h := r.header(http.Header{"Content-Type": {"application/octet-stream"}})
	_, _, err = call(t.Context(), http.MethodPut, loc.String(), h, blob, http.StatusCreated)
	return err
}

// header adds the harness's credential to h (a new header when h is nil).
func (r *Registry) header(h http.Header) http.Header {
	if h == nil {
		h = http.Header{}
	}
	for k, v := range r.auth {
		h[k] = v
	}
	return h
}

func mustParse(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// Get sends GET pathAndQuery to the registry.
func (r *Registry) Get(t testing.TB, pathAndQuery string) Response {
	t.Helper()
	return get(t, r.URL+pathAndQuery, r.header(nil))
}

// Repositories is every repository name in the registry's catalog, read
// by following its Link headers with pages of 1000 (its maximum).
func (r *Registry) Repositories(t testing.TB) []string {
	t.Helper()
	out := []string{}
	next := "/v2/_catalog?n=1000"
	for pages := 0; next != ""; pages++ {
		if pages > 1000 {
			t.Fatal("the registry's catalog did not end within 1000 pages")
		}
		u := mustParse(r.URL).ResolveReference(mustParse(next))
		hdr, b, err := call(t.Context(), http.MethodGet, u.String(), r.header(nil), nil, http.StatusOK)
		if err != nil {
			t.Fatalf("read the registry's catalog: %v", err)
		}
		var res struct {
			Repositories []string `json:"repositories"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatalf("decode the registry's catalog: %v", err)
		}
		out = append(out, res.Repositories...)
		next = nextLink(hdr.Get("Link"))
	}
	return out
}

// nextLink is the target of rel="next" in the registry's one-link Link
// header ("" when there is none).
func nextLink(h string) string {
	for part := range strings.SplitSeq(h, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if ok && strings.Contains(params, `rel="next"`) {
			return strings.Trim(strings.TrimSpace(target), "<>")
		}
	}
	return ""
}
