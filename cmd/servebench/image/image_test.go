package image

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/launch/launchtest"
	"github.com/servebench/servebench/scrape/promql/promtest"
)

// caBundle is where Debian's ca-certificates puts the bundle the
// Containerfile copies in.
const caBundle = "/etc/ssl/certs/ca-certificates.crt"

// TestContainerImage builds the image as the Containerfile's header says
// (a CGO_ENABLED=0 binary and the CA bundle in the build context), with
// buildah in a storage of its own (nothing is pulled: FROM scratch), and
// runs `servebench --version` inside it with chroot isolation, which needs
// no user namespaces (this sandbox refuses them to podman run). The
// version is stamped with a fresh value, so the answer can only come from
// the binary just built. It also checks what `servebench k8s job` relies
// on: the entrypoint, the non-root user and the CA bundle in place.
func TestContainerImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a static binary and a container image; skipped with -short")
	}
	buildah := promtest.Binary(t, "buildah", "buildah")
	if _, err := os.Stat(caBundle); err != nil {
		t.Fatalf("the Containerfile copies %s: %v (apt-get install ca-certificates)", caBundle, err)
	}
	ctx := t.TempDir()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(root, "Containerfile"), filepath.Join(ctx, "Containerfile"))
	copyFile(t, caBundle, filepath.Join(ctx, "ca-certificates.crt"))

	stamp := "image-test-" + randomHex(t)
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+stamp,
		"-o", filepath.Join(ctx, "servebench"), launchtest.Pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	store := t.TempDir()
	// vfs: a fresh storage of its own that works on any file system (the
	// image is one small layer), so no image is left in the machine's.
	run := func(args ...string) string {
		t.Helper()
		full := append([]string{"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"),
			"--storage-driver", "vfs"}, args...)
		var out, errb bytes.Buffer
		cmd := exec.Command(buildah, full...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("buildah %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return strings.TrimSpace(out.String())
	}
	tag := "localhost/servebench-image-test:" + stamp
	run("bud", "--isolation", "chroot", "-f", filepath.Join(ctx, "Containerfile"), "-t", tag, ctx)
	t.Cleanup(func() { run("rm", "--all"); run("rmi", "--all", "--force") })

	if got := run("inspect", "--format", "{{.OCIv1.Config.User}}|{{.OCIv1.Config.Entrypoint}}", tag); got != "65532:65532|[/servebench]" {
		t.Errorf("image user|entrypoint = %s, want 65532:65532|[/servebench]", got)
	}
	ctr := run("from", tag)
	mnt := run("mount", ctr)
	want, _ := os.ReadFile(caBundle)
	if got, err := os.ReadFile(filepath.Join(mnt, caBundle)); err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s in the image: %d bytes, err %v; want the build context's %d bytes", caBundle, len(got), err, len(want))
	}
	run("umount", ctr)
	out := run("run", "--isolation", "chroot", ctr, "/servebench", "--version")
	if out != "servebench version "+stamp {
		t.Errorf("servebench --version in the image printed %q, want %q", out, "servebench version "+stamp)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func randomHex(t *testing.T) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}
