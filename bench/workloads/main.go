// Command workloads benchmarks the application workloads of wanlab run
// against the targets of docs/benchmarks.md: it runs the scenarios in this
// directory through the wanlab binary and prints Markdown tables. It needs
// root.
//
//	go run ./bench/workloads -wanlab bin/wanlab
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/wanlab/wanlab/internal/controller"
)

var (
	wanlabBin = flag.String("wanlab", "bin/wanlab", "the wanlab binary")
	dir       = flag.String("dir", "bench/workloads", "where the benchmark scenarios are")
	only      = flag.String("only", "", "run only these scenarios (comma-separated file names without .yaml)")
)

func main() {
	flag.Parse()
	if err := bench(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func bench() error {
	db := filepath.Join(os.TempDir(), fmt.Sprintf("wanlab-bench-%d.db", os.Getpid()))
	defer os.Remove(db)
	fmt.Printf("Machine: %d CPUs. Each row is one step of `wanlab run %s/NAME.yaml`.\n", runtime.NumCPU(), *dir)
	for _, b := range []struct {
		name    string
		columns []string
	}{
		{"eventdb-400", []string{"jobs", "jobs_ok", "jobs_timeout", "jobs_failed", "throughput_mbps", "link_utilization_pct.server->client", "mean_wallclock_s", "cpu_pct.engine", "cpu_pct.machine"}},
		{"eventdb-100m", []string{"jobs", "jobs_ok", "jobs_timeout", "throughput_mbps", "link_utilization_pct.server->client", "mean_wallclock_s", "cpu_pct.engine"}},
		{"taskfarm-dispatch", []string{"workers", "tasks_done", "seconds", "task_rate_hz", "message_rate_hz", "roundtrip_p50_ms", "master_cpu_pct", "cpu_pct.engine", "cpu_pct.machine"}},
		{"taskfarm-prefetch", []string{"workers", "tasks_done", "seconds", "ideal_seconds", "task_rate_hz", "roundtrip_p50_ms", "worker_idle_share"}},
	} {
		if *only != "" && !strings.Contains(","+*only+",", ","+b.name+",") {
			continue
		}
		res, err := runScenario(filepath.Join(*dir, b.name+".yaml"), db)
		if err != nil {
			return err
		}
		fmt.Printf("\n### %s (run in %.0f s)\n\n| step | status | limited |", b.name, res.Seconds)
		for _, c := range b.columns {
			fmt.Printf(" %s |", c)
		}
		fmt.Printf("\n|---|---|---|%s\n", strings.Repeat("---|", len(b.columns)))
		for _, s := range res.Steps {
			limited := "no"
			if s.TestbedLimited {
				limited = strings.Join(s.LimitedBy, "; ")
			}
			fmt.Printf("| %s %s | %s | %s |", s.Workload, s.Label, s.Status, limited)
			for _, c := range b.columns {
				fmt.Printf(" %.4g |", s.Metrics[c])
			}
			fmt.Println()
		}
	}
	return nil
}

func runScenario(path, db string) (*controller.Result, error) {
	cmd := exec.Command(*wanlabBin, "run", path, "--json", "--db", db)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	err := cmd.Run()
	var res controller.Result
	if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
		return nil, fmt.Errorf("%s: %v (%v)", path, err, jerr)
	}
	return &res, nil
}
