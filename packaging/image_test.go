package packaging

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/json"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
)

// executableFormat says which platform the executable at path is for, from
// its own headers: "linux/arm64", or "" when it is none of airlock's
// platforms.
func executableFormat(path string) string {
	if f, err := elf.Open(path); err == nil {
		defer f.Close()
		switch f.Machine {
		case elf.EM_X86_64:
			return "linux/amd64"
		case elf.EM_AARCH64:
			return "linux/arm64"
		}
	}
	if f, err := macho.Open(path); err == nil {
		defer f.Close()
		switch f.Cpu {
		case macho.CpuAmd64:
			return "darwin/amd64"
		case macho.CpuArm64:
			return "darwin/arm64"
		}
	}
	if f, err := pe.Open(path); err == nil {
		defer f.Close()
		switch f.Machine {
		case pe.IMAGE_FILE_MACHINE_AMD64:
			return "windows/amd64"
		case pe.IMAGE_FILE_MACHINE_ARM64:
			return "windows/arm64"
		}
	}
	return ""
}

// ociDescriptor is a descriptor of the OCI image spec.
type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

// ociImage is an OCI image layout, read from its tar.
type ociImage struct {
	files     map[string]entry
	refName   string            // the layout entry's org.opencontainers.image.ref.name
	manifests map[string]string // platform: manifest digest
}

// blob returns the blob of a digest, having checked that it is what the
// digest says.
func (img ociImage) blob(t testing.TB, digest string) []byte {
	t.Helper()
	algo, hex, _ := strings.Cut(digest, ":")
	e, ok := img.files[path.Join("blobs", algo, hex)]
	if !ok {
		t.Fatalf("the layout lacks the blob %s", digest)
	}
	if algo != "sha256" || sha256Bytes(e.data) != hex {
		t.Fatalf("the blob %s holds other content", digest)
	}
	return e.data
}

func readImage(t testing.TB, file string) ociImage {
	t.Helper()
	img := ociImage{files: map[string]entry{}, manifests: map[string]string{}}
	for name, e := range readArchive(t, file, true) {
		img.files[strings.TrimPrefix(name, "./")] = e
	}
	var index struct {
		Manifests []ociDescriptor `json:"manifests"`
	}
	if err := json.Unmarshal(img.files["index.json"].data, &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("the layout's index.json: %v, want one entry: %s", err, img.files["index.json"].data)
	}
	img.refName = index.Manifests[0].Annotations["org.opencontainers.image.ref.name"]
	var platforms struct {
		MediaType string          `json:"mediaType"`
		Manifests []ociDescriptor `json:"manifests"`
	}
	if err := json.Unmarshal(img.blob(t, index.Manifests[0].Digest), &platforms); err != nil || platforms.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Fatalf("the layout's entry is no image index (%v): %s", err, platforms.MediaType)
	}
	for _, m := range platforms.Manifests {
		if m.Platform == nil {
			t.Fatalf("the image index names a manifest without a platform: %+v", m)
		}
		img.manifests[m.Platform.OS+"/"+m.Platform.Architecture] = m.Digest
	}
	return img
}

// TestRelease_TheImageRunsTheReleaseBinaryAsNonRootWithCACertificates
// reads the OCI image layout crane wrote (no daemon): one image per linux
// platform, whose entry point is the archive's very binary, run as
// 65532:65532, with the CA bundle, a state directory that user owns for the
// default store, and the labels naming the version, the source and the
// MCP Registry's server name.
func TestRelease_TheImageRunsTheReleaseBinaryAsNonRootWithCACertificates(t *testing.T) {
	r := requireRelease(t)
	var linux []string
	for _, p := range r.platforms {
		if strings.HasPrefix(p, "linux/") {
			linux = append(linux, p)
		}
	}
	if len(linux) == 0 {
		unavailable(t, "the release has no linux platform, so no image")
	}
	img := readImage(t, r.path("airlock_"+r.version+"_oci.tar"))
	if img.refName != r.version {
		t.Errorf("the layout names the image %q, want %q", img.refName, r.version)
	}
	var serverName struct {
		Name string `json:"name"`
	}
	if b, err := os.ReadFile(r.path("server.json")); err != nil || json.Unmarshal(b, &serverName) != nil {
		t.Fatalf("server.json: %v", err)
	}
	var platforms []string
	for p := range img.manifests {
		platforms = append(platforms, p)
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, linux) {
		t.Errorf("the image is for %v, want %v", platforms, linux)
	}
	for _, p := range linux {
		if img.manifests[p] == "" {
			continue
		}
		var manifest struct {
			Config ociDescriptor   `json:"config"`
			Layers []ociDescriptor `json:"layers"`
		}
		if err := json.Unmarshal(img.blob(t, img.manifests[p]), &manifest); err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
			Config       struct {
				User       string            `json:"User"`
				Entrypoint []string          `json:"Entrypoint"`
				Env        []string          `json:"Env"`
				Labels     map[string]string `json:"Labels"`
			} `json:"config"`
		}
		if err := json.Unmarshal(img.blob(t, manifest.Config.Digest), &cfg); err != nil {
			t.Fatal(err)
		}
		c := cfg.Config
		if cfg.OS+"/"+cfg.Architecture != p || c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/airlock"}) ||
			!slices.Contains(c.Env, "AIRLOCK_STORE=/var/lib/airlock/airlock.db") {
			t.Errorf("%s: the image runs %v as %q on %s/%s with %v", p, c.Entrypoint, c.User, cfg.OS, cfg.Architecture, c.Env)
		}
		for label, want := range map[string]string{
			"org.opencontainers.image.version":    r.version,
			"org.opencontainers.image.source":     "https://github.com/airlock-mcp/airlock",
			"io.modelcontextprotocol.server.name": serverName.Name,
		} {
			if c.Labels[label] != want {
				t.Errorf("%s: the label %s is %q, want %q", p, label, c.Labels[label], want)
			}
		}
		if len(manifest.Layers) != 1 {
			t.Fatalf("%s: %d layers, want 1", p, len(manifest.Layers))
		}
		layer := t.TempDir() + "/layer.tar.gz"
		if err := os.WriteFile(layer, img.blob(t, manifest.Layers[0].Digest), 0o644); err != nil {
			t.Fatal(err)
		}
		files := readArchive(t, layer, false)
		bin, certs, state := files["airlock"], files["etc/ssl/certs/ca-certificates.crt"], files["var/lib/airlock/"]
		if bin.sum != sha256File(t, binaryOf(t, r, p)) || bin.mode.Perm() != 0o755 {
			t.Errorf("%s: the image's /airlock (mode %v) is not the archive's binary", p, bin.mode)
		}
		if !bytes.Contains(certs.data, []byte("-----BEGIN CERTIFICATE-----")) {
			t.Errorf("%s: the image has no CA certificates", p)
		}
		if !state.mode.IsDir() || state.uid != 65532 || state.gid != 65532 || state.mode.Perm() != 0o700 {
			t.Errorf("%s: /var/lib/airlock is %v owned by %d:%d, want a 0700 directory of 65532:65532", p, state.mode, state.uid, state.gid)
		}
		for name, e := range files {
			if name != "var/lib/airlock/" && (e.uid != 0 || e.gid != 0) {
				t.Errorf("%s: %s is owned by %d:%d", p, name, e.uid, e.gid)
			}
		}
	}
}
