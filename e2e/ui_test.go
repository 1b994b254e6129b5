package e2e

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wanlab ui serves an archive of runs until Ctrl-C, and says plainly what
// is wrong with its flags or archive.
func TestUI(t *testing.T) {
	fixture, err := os.ReadFile("../internal/report/testdata/every-kind-a223ce5.db")
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "runs.db")
	os.WriteFile(db, fixture, 0o644)
	if r := wanlab(t, "ui", "--db", filepath.Join(t.TempDir(), "none.db")); r.code != 1 || !strings.Contains(r.stderr, "no archive at") {
		t.Errorf("ui of no archive: exit %d: %s", r.code, r.stderr)
	}
	if r := wanlab(t, "ui", "--db", db, "--http", "nowhere"); r.code != 2 || !strings.Contains(r.stderr, "give ADDR:PORT") {
		t.Errorf("ui --http nowhere: exit %d: %s", r.code, r.stderr)
	}
	addr := freeAddr(t)
	cmd := exec.Command(wanlabBin, "ui", "--db", db, "--http", addr)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if !waitFor(30*time.Second, func() bool { return strings.Contains(out.String(), "dashboard at http://"+addr+"/") }) {
		t.Fatalf("wanlab ui did not say where it serves: %s", out)
	}
	for path, want := range map[string]string{"/": "every-kind.yaml", "/runs/1": "every-kind", "/compare?runs=1": "Efficient running against link speed"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %s, want %q", path, resp.Status, want)
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("wanlab ui after Ctrl-C: %v: %s", err, out)
	}
}
