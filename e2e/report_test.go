package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/testsupport"
)

// TestDemoReport runs the demo scenario (quick), checks the findings it
// prints and that the HTML report has its plots, stays small, and renders in
// a headless browser.
func TestDemoReport(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "chromium")
	dir := t.TempDir()
	r := wanlab(t, "run", "objectivity-demo", "--quick", "--db", filepath.Join(dir, "wanlab.db"), "--report", dir)
	assertNothingLeft(t, "objectivity-demo")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"Findings (bottleneck: server_cpu)", "lan-100mbit: The bottleneck at the peak is the server's CPU", "wan-10mbit: The bottleneck at the peak is the network", "report: "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	path := regexp.MustCompile(`report: (\S+)`).FindStringSubmatch(r.stdout)[1]
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(html) > 5<<20 {
		t.Errorf("report is %d bytes, over 5 MB", len(html))
	}
	// Two workloads x (throughput, CPU, wall-clock, histogram), and the links.
	if n := strings.Count(string(html), "<svg"); n < 10 {
		t.Errorf("report has %d plots", n)
	}
	for _, want := range []string{"<h2 id=\"findings\">", "server_cpu", "network", "lan-100mbit: CPU (% of quota)", "link server-&gt;lanclient", "name: objectivity-demo"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Namespaces (xmlns="http://www.w3.org/...") are names, not fetches.
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:|//)|url\(\s*["']?(https?:|//)|@import`).FindString(string(html)); m != "" {
		t.Errorf("the report loads %q from the network; it must be self-contained", m)
	}
	// The browser renders it: the DOM has the plots, and a screenshot is drawn.
	shot := filepath.Join(dir, "shot.png")
	out, err := exec.Command("chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,2000",
		"--screenshot="+shot, "file://"+path).CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 20000 {
		t.Errorf("screenshot: %v, %v bytes", err, fi)
	}
	dom, err := exec.Command("chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", "file://"+path).Output()
	if err != nil || strings.Count(string(dom), "<svg") < 10 || !strings.Contains(string(dom), "wanlab run 1: objectivity-demo") {
		t.Errorf("chromium's DOM: %v, %d plots", err, strings.Count(string(dom), "<svg"))
	}
}

// TestImportIperf3: iperf3's own JSON from an emulated path lands in the
// archive and gets analysed and reported like wanlab's measurements.
func TestImportIperf3(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iperf3")
	name := up(t, "name: e2e-import\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - between: [a, b]\n    rate: 20Mbit\n    delay: 5ms\n")
	s := status(t, name)
	srv := exec.Command(wanlabBin, "testbed", "exec", name, "b", "--", "iperf3", "-s", "-1")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	var out []byte
	var err error
	for range 20 {
		time.Sleep(200 * time.Millisecond)
		out, err = exec.Command(wanlabBin, "testbed", "exec", name, "a", "--", "iperf3", "-c", s.addr("b"), "-t", "3", "-P", "2", "-J").Output()
		if err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("iperf3: %v\n%s", err, out)
	}
	srv.Wait()
	dir := t.TempDir()
	file, db := filepath.Join(dir, "a-b.json"), filepath.Join(dir, "w.db")
	os.WriteFile(file, out, 0o644)
	r := wanlab(t, "import", "iperf3", file, "--db", db, "--json")
	var imp struct {
		Run  int64   `json:"run"`
		Bits float64 `json:"bits_per_second"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &imp); err != nil || r.code != 0 || imp.Run != 1 {
		t.Fatalf("import: exit %d: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if imp.Bits < 0.9*20e6*1448/1500 || imp.Bits > 20e6 {
		t.Errorf("imported %.2f Mbit/s on a 20 Mbit/s path", imp.Bits/1e6)
	}
	if r := wanlab(t, "analyze", "1", "--db", db, "--json"); r.code != 0 || !strings.Contains(r.stdout, `"kind": "throughput"`) {
		t.Errorf("analyze: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := wanlab(t, "report", "1", "--db", db, "--out", dir); r.code != 0 {
		t.Errorf("report: exit %d: %s", r.code, r.stderr)
	}
	if r := wanlab(t, "import", "iperf3", filepath.Join(dir, "w.db"), "--db", db); r.code != 1 || !strings.Contains(r.stderr, "not iperf3 JSON") {
		t.Errorf("importing a database file: exit %d: %s", r.code, r.stderr)
	}
}
