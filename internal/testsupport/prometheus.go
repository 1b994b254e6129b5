package testsupport

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PromServer is a private Prometheus started for a test.
type PromServer struct {
	URL string
}

// Prometheus starts a private Prometheus on a free loopback port that
// scrapes target (host:port, path /metrics) every second and loads the
// rule files, and stops it at the test's end.
func Prometheus(t testing.TB, target string, ruleFiles ...string) *PromServer {
	t.Helper()
	bin, in := newServer(t, "prometheus")
	var rules string
	for _, f := range ruleFiles {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		rules += fmt.Sprintf("  - %q\n", abs)
	}
	if rules != "" {
		rules = "rule_files:\n" + rules
	}
	conf := filepath.Join(in.dir, "prometheus.yml")
	text := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
%sscrape_configs:
  - job_name: wanlab
    static_configs:
      - targets: [%q]
`, rules, target)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	p := &PromServer{URL: "http://127.0.0.1:" + strconv.Itoa(port)}
	cmd := exec.Command(bin, "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(in.dir, "data"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(port))
	if err := in.start(cmd); err != nil {
		t.Fatal(err)
	}
	err = in.waitFor(60*time.Second, func() error {
		resp, err := http.Get(p.URL + "/-/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("not ready: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Sample is one series of an instant query's answer.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query runs an instant PromQL query.
func (p *PromServer) Query(expr string) ([]Sample, error) {
	resp, err := http.Get(p.URL + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var doc struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("reading Prometheus's answer to %s: %w", expr, err)
	}
	if doc.Status != "success" {
		return nil, fmt.Errorf("Prometheus: %s: %s", expr, doc.Error)
	}
	var out []Sample
	for _, r := range doc.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("Prometheus: %s: value %q", expr, s)
		}
		out = append(out, Sample{Labels: r.Metric, Value: v})
	}
	return out, nil
}

// RuleHealth is each loaded rule's name and health ("ok", "err", "unknown").
func (p *PromServer) RuleHealth() (map[string]string, error) {
	resp, err := http.Get(p.URL + "/api/v1/rules")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var doc struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, g := range doc.Data.Groups {
		for _, r := range g.Rules {
			out[r.Name] = strings.TrimSpace(r.Health + " " + r.LastError)
		}
	}
	return out, nil
}
