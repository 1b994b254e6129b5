// Command scale measures what wanlab predict costs as the work it
// simulates grows (issue 34's scale targets, docs/benchmarks.md): it
// predicts the built-ins monarc-wan (not --quick: three servers at once,
// 3,000, 4,500 and 6,000 concurrent jobs in its three steps) and alice-grid,
// bench/graphs/mesh1000.yaml, and
// generated scenarios of a few sizes (an event store read by more and more
// concurrent jobs, meshes of more and more hosts), each through the wanlab
// binary, and prints the seconds and the peak memory of each as Markdown.
//
//	go run ./bench/scale -wanlab bin/wanlab
//	go run ./bench/scale -only monarc-wan,mesh1000
//	go run ./bench/scale -mesh 1000 > bench/graphs/mesh1000.yaml
//
// Peak memory is the largest resident set of the wanlab process and of the
// simulators (bin/wanlab-sim) it ran, one per step: Linux gives a waited-for
// process's ru_maxrss as the largest of its own and its waited-for
// children's. The simulator's own share (its seconds over all steps and its
// largest resident set) is measured apart: wanlab predict runs this program
// as its simulator ($WANLAB_SIM), which runs bin/wanlab-sim and notes what
// it took.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// The environment of this program run as wanlab predict's simulator: the
// real simulator, and the file its costs go to.
const (
	realSimEnv = "WANLAB_SCALE_SIM"
	notesEnv   = "WANLAB_SCALE_NOTES"
)

var (
	wanlabBin = flag.String("wanlab", "bin/wanlab", "the wanlab binary (bin/wanlab-sim beside it)")
	only      = flag.String("only", "", "run only these cases (comma-separated: monarc-wan, alice-grid, mesh1000, jobs, hosts)")
	meshHosts = flag.Int("mesh", 0, "print the scenario of a mesh of this many hosts and stop")
)

func main() {
	if real := os.Getenv(realSimEnv); real != "" {
		os.Exit(simulate(real, os.Getenv(notesEnv)))
	}
	flag.Parse()
	if *meshHosts > 0 {
		fmt.Print(meshYAML(*meshHosts))
		return
	}
	if err := bench(); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// a case is one prediction: a built-in's name or a scenario file, and the
// work it simulates.
type benchCase struct {
	group, name, scenario string
	hosts, jobs, steps    int
}

func bench() error {
	dir, err := os.MkdirTemp("", "wanlab-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cases := []benchCase{
		{"monarc-wan", "monarc-wan", "monarc-wan", 303, 6000, 3},
		{"alice-grid", "alice-grid", "alice-grid", 80, 0, 1},
		{"mesh1000", "mesh1000", "bench/graphs/mesh1000.yaml", 1000, 0, 1},
	}
	for _, jobs := range []int{5, 10, 20, 40, 60} {
		name := fmt.Sprintf("eventdb-%d", 100*jobs)
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(eventdbYAML(name, 100, jobs)), 0o644); err != nil {
			return err
		}
		cases = append(cases, benchCase{"jobs", name, path, 101, 100 * jobs, 1})
	}
	for _, hosts := range []int{100, 300, 600} {
		name := fmt.Sprintf("mesh-%d", hosts)
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(meshYAML(hosts)), 0o644); err != nil {
			return err
		}
		cases = append(cases, benchCase{"hosts", name, path, hosts, 0, 1})
	}
	fmt.Printf("Machine: %d CPUs. Each row is `wanlab predict SCENARIO` (not --quick), run once.\n\n", runtime.NumCPU())
	fmt.Println("| scenario | hosts | concurrent jobs (largest step) | steps | status | seconds | peak memory (MB) | simulator seconds | simulator peak (MB) |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, c := range cases {
		if *only != "" && !strings.Contains(","+*only+",", ","+c.group+",") {
			continue
		}
		got, err := predict(c.scenario, filepath.Join(dir, c.name+".db"))
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		jobs := "-"
		if c.jobs > 0 {
			jobs = fmt.Sprint(c.jobs)
		}
		fmt.Printf("| %s | %d | %s | %d | %s | %.1f | %.0f | %.1f | %.0f |\n", c.name, c.hosts, jobs, c.steps, got.status, got.seconds, got.mb, got.simSeconds, got.simMB)
	}
	return nil
}

// simulate runs the simulator real as wanlab predict ran this program,
// and appends its seconds and peak resident memory (MB) to the file notes.
func simulate(real, notes string) int {
	cmd := exec.Command(real, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	if f, ferr := os.OpenFile(notes, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); ferr == nil {
		fmt.Fprintf(f, "%f %f\n", time.Since(start).Seconds(), peakMB(cmd.ProcessState))
		f.Close()
	}
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		return 1
	}
	return 0
}

// peakMB is the largest resident set of a process that ended (and of its
// children), in MB.
func peakMB(st *os.ProcessState) float64 {
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		return float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	return 0
}

// cost is what one prediction took: all of it, and the simulator's part.
type cost struct {
	status            string
	seconds, mb       float64
	simSeconds, simMB float64
}

// predict runs wanlab predict on scenario into the archive db, with this
// program standing in for its simulator, and gives what it cost.
func predict(scenario, db string) (c cost, err error) {
	self, err := os.Executable()
	if err != nil {
		return c, err
	}
	sim := filepath.Join(filepath.Dir(*wanlabBin), "wanlab-sim")
	if s := os.Getenv("WANLAB_SIM"); s != "" {
		sim = s
	}
	notes := db + ".sim"
	cmd := exec.Command(*wanlabBin, "predict", scenario, "--db", db, "--json")
	cmd.Env = append(os.Environ(), "WANLAB_SIM="+self, realSimEnv+"="+sim, notesEnv+"="+notes)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	c.seconds = time.Since(start).Seconds()
	if err != nil {
		return c, fmt.Errorf("wanlab predict %s: %w: %s", scenario, err, lastLine(stderr.String()))
	}
	var res struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return c, fmt.Errorf("reading the result of wanlab predict %s: %w", scenario, err)
	}
	c.status, c.mb = res.Status, peakMB(cmd.ProcessState)
	data, err := os.ReadFile(notes)
	if err != nil {
		return c, fmt.Errorf("the simulator's costs: %w", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var secs, mb float64
		if _, err := fmt.Sscan(line, &secs, &mb); err != nil {
			return c, fmt.Errorf("the simulator's costs %q: %w", line, err)
		}
		c.simSeconds += secs
		c.simMB = max(c.simMB, mb)
	}
	return c, nil
}

// lastLine is the last non-empty line of s (the progress bar's lines end
// in carriage returns).
func lastLine(s string) string {
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	if len(lines) == 0 {
		return "(no message)"
	}
	return lines[len(lines)-1]
}

// eventdbYAML is one step of monarc-wan's kind at another size: a 4-core
// server on a 100 Mbit/s link to a router, read by clients on 100 Mbit/s
// links each running jobs jobs of 20 events.
func eventdbYAML(name string, clients, jobs int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %d clients x %d jobs of monarc-wan's kind (go run ./bench/scale).\nname: %s\nbackend: simulated\nrouters: {gw: {}}\nhosts:\n  db: {cpus: 4}\n", clients, jobs, name)
	var names []string
	for i := range clients {
		names = append(names, fmt.Sprintf("c%d", i))
		fmt.Fprintf(&b, "  c%d: {cpus: 1}\n", i)
	}
	b.WriteString("links:\n  - {between: [db, gw], rate: 100Mbit, delay: 3ms}\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  - {between: [%s, gw], rate: 100Mbit, delay: 0.2ms}\n", n)
	}
	fmt.Fprintf(&b, `workloads:
  - eventdb:
      server: db
      clients: [%s]
      jobs: %d
      events_per_job: 20
      server_model: threads
      threads: 4
      server_cpu_per_page: 0.7ms
      client_cpu_per_event: 2ms
`, strings.Join(names, ", "), jobs)
	return b.String()
}

// aliceSites are alice-mesh's site access rates (Mbit/s), which the mesh's
// sites take in turn.
var aliceSites = []int{28, 32, 8, 34, 1024, 155, 155, 16}

// meshYAML is a mesh of hosts hosts, each at its own site with one of
// alice-mesh's access rates in turn, 5 ms each way, transferring alice-mesh's
// files for 10 minutes over 8 streams (the seed's other setting): with 16,
// a thousand hosts' transfers at once are some 32,000 simulator actors,
// whose stacks and guard pages pass the kernel's 65,530 memory maps
// (vm.max_map_count), and the simulator stops ("Failed to protect stack").
func meshYAML(hosts int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# A random transfer mesh of %d hosts, each at its own site with alice-mesh's\n"+
		"# access rates in turn (28, 32, 8, 34, 1024, 155, 155, 16 Mbit/s; 5 ms each way), sending\n"+
		"# alice-mesh's files (1.6, 0.8, 0.3 GB over 8 streams, memory to memory) for 10 minutes:\n"+
		"# issue 34's scale target (docs/benchmarks.md). Written by go run ./bench/scale -mesh %d.\n"+
		"name: mesh%d\nbackend: simulated\nhosts:\n", hosts, hosts, hosts)
	for i := range hosts {
		fmt.Fprintf(&b, "  h%d: {site: s%d}\n", i, i)
	}
	b.WriteString("sites:\n")
	for i := range hosts {
		fmt.Fprintf(&b, "  s%d: {rate: %dMbit, delay: 5ms}\n", i, aliceSites[i%len(aliceSites)])
	}
	b.WriteString(`workloads:
  - name: mesh
    mesh:
      duration: 10m
      max_wait: 1m
      sizes: [1.6GB, 0.8GB, 0.3GB]
      streams: 8
`)
	return b.String()
}
