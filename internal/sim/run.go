package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The largest program Run hands to the simulator: it counts them before it
// encodes anything. bin/wanlab-sim has the same bounds (sim/wanlab-sim.cpp:
// keep the two in step). They leave room for the scale, 10,000
// concurrent jobs and meshes of a thousand hosts, with millions of ops.
const (
	// MaxHosts bounds the hosts: SimGrid's Full zone keeps a table of
	// hosts² routes.
	MaxHosts  = 5_000
	MaxLinks  = 100_000
	MaxRoutes = 1_000_000
	// MaxRouteLinks bounds the links of one route.
	MaxRouteLinks = 256
	MaxActors     = 50_000
	// MaxOps bounds the ops of all actors, those nested in Repeat and Par
	// included.
	MaxOps = 4_000_000
	// MaxDepth bounds the nesting of Repeat and Par.
	MaxDepth = 32
	// MaxOutput bounds what Run reads of the simulator's output (its
	// marks, mostly); the simulator itself stops at 5 million marks.
	MaxOutput = 512 << 20
	// maxStderr bounds what Run keeps of the simulator's errors.
	maxStderr = 64 << 10
)

// SimulatorEnv names the environment variable that, when set, is the path of
// the simulator Run starts.
const SimulatorEnv = "WANLAB_SIM"

// simulatorName is the simulator's file name.
const simulatorName = "wanlab-sim"

var (
	// ErrNoSimulator says bin/wanlab-sim is missing: wanlab was built where
	// SimGrid is not installed.
	ErrNoSimulator = errors.New("sim: the simulator bin/wanlab-sim is missing: wanlab predict needs " +
		"apt-get install -y libsimgrid-dev nlohmann-json3-dev, then make build")
	// ErrTooLarge says a program is past one of the limits above.
	ErrTooLarge = errors.New("sim: program too large")
	// ErrBadProgram says the simulator could not run a program: an unknown
	// op, actor, host or link, a send with no route. The error names it.
	ErrBadProgram = errors.New("sim: the simulator cannot run the program")
)

// Available says whether Run can start the simulator: nil, or an error that
// matches ErrNoSimulator and says where it looked.
func Available() error {
	_, err := simulator()
	return err
}

// simulator finds bin/wanlab-sim: $WANLAB_SIM, else next to the running
// executable, else bin/wanlab-sim under the module root (for tests), else
// on PATH.
func simulator() (string, error) {
	if p := os.Getenv(SimulatorEnv); p != "" {
		if !executable(p) {
			return "", fmt.Errorf("%w ($%s is %s, which is not an executable file)", ErrNoSimulator, SimulatorEnv, p)
		}
		return p, nil
	}
	var tried []string
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), simulatorName)
		if executable(p) {
			return p, nil
		}
		tried = append(tried, p)
	}
	if root, ok := moduleRoot(); ok {
		p := filepath.Join(root, "bin", simulatorName)
		if executable(p) {
			return p, nil
		}
		tried = append(tried, p)
	}
	if p, err := exec.LookPath(simulatorName); err == nil {
		return p, nil
	}
	tried = append(tried, "$PATH")
	return "", fmt.Errorf("%w (looked for %s in %s)", ErrNoSimulator, simulatorName, strings.Join(tried, ", "))
}

func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// moduleRoot is the directory of wanlab's go.mod above the working
// directory, when there is one (tests run in their package's directory).
func moduleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			return dir, bytes.HasPrefix(data, []byte("module github.com/wanlab/wanlab\n"))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// Run simulates prog with bin/wanlab-sim and returns what it gave back. It
// refuses a program past the limits above (ErrTooLarge) and one the
// simulator cannot run (ErrBadProgram); the simulator is killed when ctx
// ends.
func Run(ctx context.Context, prog *Program) (*Output, error) {
	out, _, err := run(ctx, prog)
	return out, err
}

// run is Run that also gives the simulator's process state (its CPU time
// and peak memory), for the benchmarks.
func run(ctx context.Context, prog *Program) (*Output, *os.ProcessState, error) {
	if err := CheckLimits(prog); err != nil {
		return nil, nil, err
	}
	path, err := simulator()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, path)
	stdout := &boundedBuffer{max: MaxOutput}
	stderr := &boundedBuffer{max: maxStderr, discard: true}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, fmt.Errorf("sim: starting %s: %w", path, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("sim: starting %s: %w", path, err)
	}
	encoded := make(chan error, 1)
	go func() {
		err := json.NewEncoder(stdin).Encode(prog)
		if cerr := stdin.Close(); err == nil {
			err = cerr
		}
		encoded <- err
	}()
	waitErr := cmd.Wait()
	encErr := <-encoded
	state := cmd.ProcessState
	switch {
	case ctx.Err() != nil:
		return nil, state, fmt.Errorf("sim: simulation stopped: %w", ctx.Err())
	case stdout.overflow:
		return nil, state, fmt.Errorf("sim: %s wrote more than %d bytes: %w", path, MaxOutput, ErrTooLarge)
	case waitErr != nil:
		var exit *exec.ExitError
		if errors.As(waitErr, &exit) && exit.ExitCode() == 2 {
			return nil, state, fmt.Errorf("%w: %s", ErrBadProgram, firstLine(stderr.String()))
		}
		return nil, state, fmt.Errorf("sim: %s failed: %w: %s", path, waitErr, firstLine(stderr.String()))
	case encErr != nil:
		return nil, state, fmt.Errorf("sim: writing the program to %s: %w", path, encErr)
	}
	var out Output
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, state, fmt.Errorf("sim: reading the output of %s: %w", path, err)
	}
	return &out, state, nil
}

// firstLine is the first non-empty line of the simulator's errors.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return strings.TrimPrefix(l, simulatorName+": ")
		}
	}
	return "(no message)"
}

// boundedBuffer keeps at most max bytes. Past them it fails its writes, so
// the simulator stops on a broken pipe, or, with discard, drops the rest.
type boundedBuffer struct {
	bytes.Buffer
	max      int
	discard  bool
	overflow bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		b.overflow = true
		if b.discard {
			b.Buffer.Write(p[:b.max-b.Len()])
			return len(p), nil
		}
		return 0, io.ErrShortWrite
	}
	return b.Buffer.Write(p)
}

// CheckLimits counts what prog would make the simulator allocate and
// refuses it (ErrTooLarge) past the limits above; it also refuses numbers
// JSON cannot carry (NaN, infinities: ErrBadProgram), naming where they are.
func CheckLimits(prog *Program) error {
	pl := &prog.Platform
	for _, c := range []struct {
		what     string
		n, limit int
	}{
		{"hosts", len(pl.Hosts), MaxHosts},
		{"links", len(pl.Links), MaxLinks},
		{"routes", len(pl.Routes), MaxRoutes},
		{"actors", len(prog.Actors), MaxActors},
	} {
		if c.n > c.limit {
			return fmt.Errorf("%w: %d %s, the limit is %d", ErrTooLarge, c.n, c.what, c.limit)
		}
	}
	for _, r := range pl.Routes {
		if len(r.Links) > MaxRouteLinks {
			return fmt.Errorf("%w: the route from %s to %s has %d links, the limit is %d", ErrTooLarge, r.From, r.To, len(r.Links), MaxRouteLinks)
		}
	}
	for _, h := range pl.Hosts {
		if err := finite("host "+h.Name, h.Speed, h.Quota, h.DiskReadBPS, h.DiskWriteBPS); err != nil {
			return err
		}
	}
	for _, l := range pl.Links {
		if err := finite("link "+l.Name, l.BPS, l.Latency); err != nil {
			return err
		}
	}
	if err := finite("config", prog.Config.BandwidthFactor, prog.Config.LatencyFactor, prog.Horizon); err != nil {
		return err
	}
	ops := 0
	for _, a := range prog.Actors {
		if err := countOps(a.Ops, 1, &ops, "actor "+a.Name); err != nil {
			return err
		}
	}
	return nil
}

func countOps(ops []Op, depth int, n *int, where string) error {
	if depth > MaxDepth {
		return fmt.Errorf("%w: %s: ops nested deeper than %d", ErrTooLarge, where, MaxDepth)
	}
	*n += len(ops)
	if *n > MaxOps {
		return fmt.Errorf("%w: more than %d ops", ErrTooLarge, MaxOps)
	}
	for i := range ops {
		op := &ops[i]
		nums := [...]float64{op.Seconds, op.RateBPS, op.ServerSeconds, op.Timeout}
		if len(op.Body) == 0 && len(op.Branches) == 0 && finite("", nums[:]...) == nil {
			continue // the common case, without making its name
		}
		w := fmt.Sprintf("%s op %d (%s)", where, i+1, op.Do)
		if err := finite(w, nums[:]...); err != nil {
			return err
		}
		if err := countOps(op.Body, depth+1, n, w); err != nil {
			return err
		}
		for _, b := range op.Branches {
			if err := countOps(b, depth+1, n, w); err != nil {
				return err
			}
		}
	}
	return nil
}

// finite refuses NaN and infinities, which JSON cannot carry.
func finite(where string, xs ...float64) error {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%w: %s: %v is not a finite number", ErrBadProgram, where, x)
		}
	}
	return nil
}
