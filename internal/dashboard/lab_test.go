package dashboard

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/testsupport"
)

// labArchive is a copy of a real run of every workload kind (the report's
// fixture), opened read-only as wanlab ui opens one.
func labArchive(t *testing.T) string {
	src, err := os.ReadFile("../report/testdata/every-kind-a223ce5.db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "lab.db")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	ar, err := archive.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ar.Close() })
	srv := httptest.NewServer(Lab(ar, "test", []string{"lab.example.org"}, t.Logf))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestLabPages(t *testing.T) {
	base := labArchive(t)
	cases := []struct {
		path string
		code int
		has  string
	}{
		{"/", 200, `href="/runs/1"`},
		{"/runs/1", 200, "every-kind"},
		{"/runs/99", 404, "no such run"},
		{"/runs/x", 400, "a run is a number"},
		{"/compare?runs=1", 200, "Efficient running against link speed"},
		{"/compare?runs=1&runs=99", 200, "no such run"},
		{"/compare", 400, "choose 1 to 20 runs"},
		{"/compare?runs=1%27--", 400, "is not a run number"},
		{"/api/v1/runs", 200, `"every-kind.yaml"`},
	}
	for _, c := range cases {
		code, h, body := get(t, base+c.path)
		if code != c.code || !strings.Contains(body, c.has) {
			t.Errorf("GET %s: %d, want %d with %q:\n%.300s", c.path, code, c.code, c.has, body)
		}
		if csp := h.Get("Content-Security-Policy"); csp == "" || strings.Contains(csp, "script-src *") {
			t.Errorf("GET %s: Content-Security-Policy %q", c.path, csp)
		}
	}
	// A comparison of one run with one event-database workload cannot
	// conclude on link speeds: it says nothing rather than guess.
	if _, _, body := get(t, base+"/compare?runs=1"); strings.Contains(body, `id="conclusion"`) {
		t.Error("a conclusion from a single link speed")
	}
}

func TestLabInBrowser(t *testing.T) {
	base := labArchive(t)
	ctx := testsupport.Browser(t, 60*time.Second)
	shots := os.Getenv("WANLAB_SCREENSHOTS")
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible("#runs")); err != nil {
		t.Fatal(err)
	}
	if err := testsupport.Screenshot(ctx, shots, "dashboard-runs.png"); err != nil {
		t.Error(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`input[name="runs"][value="1"]`), chromedp.Click(`button[type="submit"]`), chromedp.WaitVisible("#efficient")); err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelectorAll("#efficient tr").length`))
	if err != nil || rows != 2 {
		t.Errorf("efficient-running table: %v rows (with its head), %v", rows, err)
	}
	if err := testsupport.Screenshot(ctx, shots, "dashboard-compare.png"); err != nil {
		t.Error(err)
	}
}

// wanlab ui refuses a DNS-rebinding page's requests as serve does: the
// Host must be the listener's address or one of its names.
func TestLabChecksTheHost(t *testing.T) {
	base := labArchive(t)
	port := base[strings.LastIndex(base, ":")+1:]
	for host, want := range map[string]int{"": 200, "lab.example.org:" + port: 200, "localhost:" + port: 200, "rebind.attacker.example:" + port: 421} {
		if got := testsupport.HostStatus(t, base+"/api/v1/runs", host); got != want {
			t.Errorf("Host %q: %d, want %d", host, got, want)
		}
	}
}
