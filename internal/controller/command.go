package controller

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/workload/diskio"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// serverReady is how long a command workload's server may take to listen.
const serverReady = 30 * time.Second

// runCommand runs a command workload: its files, its server (until the
// clients end) and its clients, each client a job.
func runCommand(ctx context.Context, env *stepEnv, c *scenario.Command) (*outcome, error) {
	files, ok := env.bed.(backend.HostFiles)
	if !ok {
		return nil, errors.New("a command workload runs in emulated hosts, and these hosts are not")
	}
	var dirErr error
	dir := func(h string) string {
		d, err := files.DataDir(h)
		if err != nil {
			dirErr = err
		}
		return d
	}
	addr := func(h string) string {
		hp, _ := env.topo.Host(h)
		return hp.Addr
	}
	expand := func(host string, argv []string) []string {
		out := make([]string, len(argv))
		for i, a := range argv {
			out[i] = scenario.ExpandPlaceholders(a, host, dir, addr)
		}
		return out
	}
	for _, f := range c.Files {
		if err := makeFile(ctx, dir(f.Host), f, func(s string) string { return scenario.ExpandPlaceholders(s, f.Host, dir, addr) }); err != nil {
			return nil, fmt.Errorf("making %s on %s: %w", f.Name, f.Host, err)
		}
	}
	if dirErr != nil {
		return nil, dirErr
	}
	o := &outcome{metrics: results.Metrics{}}
	if c.Server != nil {
		sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		srv := newProgram(sctx, env.bed, c.Server.Host, dir(c.Server.Host), expand(c.Server.Host, c.Server.Run))
		if err := srv.cmd.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("starting the server on %s (%s): %w", c.Server.Host, c.Server.Run[0], err)
		}
		exited := make(chan error, 1)
		go func() { exited <- srv.cmd.Wait() }()
		defer func() {
			stop() // SIGTERM, then SIGKILL after the wait delay
			if err := <-exited; err != nil && !isStopSignal(err) {
				o.events = append(o.events, fmt.Sprintf("the server on %s ended with %v: %s", c.Server.Host, err, srv.tail()))
			}
		}()
		if c.Server.Ready > 0 {
			if err := waitListening(ctx, srv.cmd.Process.Pid, c.Server.Ready, exited); err != nil {
				return o, fmt.Errorf("the server on %s (%s): %w; its output: %s", c.Server.Host, c.Server.Run[0], err, srv.tail())
			}
		}
	}
	cctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	env.expected.add(len(c.Clients))
	var wg sync.WaitGroup
	records := make([]job.Record, len(c.Clients))
	for i, cl := range c.Clients {
		wg.Go(func() {
			p := newProgram(cctx, env.bed, cl.Host, dir(cl.Host), expand(cl.Host, cl.Run))
			r := job.Record{ID: i + 1, Host: cl.Host, Subject: cl.Run[0], Start: time.Now()}
			err := p.cmd.Run()
			r.End = time.Now()
			switch {
			case err == nil:
				r.Status = job.OK
				env.finished.add(1)
			case cctx.Err() != nil && ctx.Err() == nil:
				r.Status, r.Reason = job.Timeout, fmt.Sprintf("still running after %v: %s", c.Timeout, p.tail())
				env.failed.add(1)
			default:
				r.Status, r.Reason = job.Failed, fmt.Sprintf("%v: %s", err, p.tail())
				env.failed.add(1)
			}
			records[i] = r
		})
	}
	wg.Wait()
	o.jobs = records
	for k, v := range jobMetrics(records) {
		o.metrics[k] = v
	}
	o.metrics[results.Jobs] = float64(len(records))
	var failed []string
	for _, r := range records {
		if r.Status != job.OK {
			failed = append(failed, fmt.Sprintf("client %d on %s (%s): %s", r.ID, r.Host, r.Subject, r.Reason))
		}
	}
	if ctx.Err() != nil {
		return o, ctx.Err()
	}
	if len(failed) > 0 {
		return o, errors.New(strings.Join(failed, "; "))
	}
	return o, nil
}

// program is a command running in a host, the end of its output kept.
type program struct {
	cmd *exec.Cmd
	out *tailBuffer
}

func newProgram(ctx context.Context, bed backend.Bed, host, dir string, argv []string) *program {
	p := &program{cmd: bed.Command(ctx, host, argv...), out: &tailBuffer{max: 2048}}
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	// A stopped program gets SIGTERM and a moment to end cleanly.
	p.cmd.Cancel = func() error { return p.cmd.Process.Signal(syscall.SIGTERM) }
	p.cmd.WaitDelay = 5 * time.Second
	return p
}

// tail is the end of the program's output, on one line.
func (p *program) tail() string {
	s := strings.Join(strings.Fields(p.out.String()), " ")
	if s == "" {
		return "(no output)"
	}
	return s
}

func isStopSignal(err error) bool {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && (ws.Signal() == syscall.SIGTERM || ws.Signal() == syscall.SIGKILL) {
			return true
		}
		return ee.ExitCode() == 0
	}
	return false
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// makeFile writes a command workload's file into its host's data
// directory, never through a link (what runs in the host could have left
// one there): text with its placeholders filled in, or generated data
// dropped from the page cache.
func makeFile(ctx context.Context, dir string, f scenario.CommandFile, expand func(string) string) error {
	d, err := datadir.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	out, err := d.OpenFile(f.Name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY)
	if err != nil {
		return err
	}
	if f.Size == 0 {
		_, err := out.WriteString(expand(f.Text))
		return errors.Join(err, out.Close())
	}
	err = transfer.MakeFile(ctx, out, f.Size)
	if err == nil {
		err = out.Sync()
	}
	if err == nil {
		err = diskio.DropCached(out)
	}
	return errors.Join(err, out.Close())
}

// waitListening waits until the process pid (in its host's namespace)
// has a TCP socket listening on port, as its namespace's /proc/net/tcp
// says, or until it exits.
func waitListening(ctx context.Context, pid, port int, exited <-chan error) error {
	deadline := time.Now().Add(serverReady)
	for {
		if ok, err := listening(pid, port); err == nil && ok {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("it exited before listening on port %d (%v)", port, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listened on port %d within %v", port, serverReady)
		}
	}
}

// listening reads /proc/PID/net/tcp and tcp6 (the process's namespace's
// sockets) for one listening on port.
func listening(pid, port int) (bool, error) {
	want := fmt.Sprintf(":%04X", port)
	for _, name := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "net", name))
		if err != nil {
			if name == "tcp6" {
				continue
			}
			return false, err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			// sl local_address rem_address st ...; 0A is LISTEN.
			if len(f) > 3 && strings.HasSuffix(f[1], want) && f[3] == "0A" {
				return true, nil
			}
		}
	}
	return false, nil
}
