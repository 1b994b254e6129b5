package command

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// serverReady is how long a command workload's server may take to listen.
const serverReady = 30 * time.Second

// run runs a command step: its files, its server (until the clients end)
// and its clients, each client a job.
func run(ctx context.Context, env kind.Env, c *Spec) (*kind.Outcome, error) {
	files := env.Files()
	if files == nil {
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
	expand := func(host string, argv []string) []string {
		out := make([]string, len(argv))
		for i, a := range argv {
			out[i] = ExpandPlaceholders(a, host, dir, env.Addr)
		}
		return out
	}
	for _, f := range c.Files {
		text := ""
		if f.Size == 0 {
			text = ExpandPlaceholders(f.Text, f.Host, dir, env.Addr)
		}
		if err := files.MakeFile(ctx, f.Host, f.Name, f.Size, text); err != nil {
			return nil, fmt.Errorf("making %s on %s: %w", f.Name, f.Host, err)
		}
	}
	if dirErr != nil {
		return nil, dirErr
	}
	o := &kind.Outcome{Metrics: results.Metrics{}}
	if c.Server != nil {
		sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		srv := newProgram(sctx, env, c.Server.Host, dir(c.Server.Host), expand(c.Server.Host, c.Server.Run))
		if err := srv.cmd.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("starting the server on %s (%s): %w", c.Server.Host, c.Server.Run[0], err)
		}
		exited := make(chan error, 1)
		go func() { exited <- srv.cmd.Wait() }()
		defer func() {
			stop() // SIGTERM, then SIGKILL after the wait delay
			if err := <-exited; err != nil && !isStopSignal(err) {
				o.Events = append(o.Events, fmt.Sprintf("the server on %s ended with %v: %s", c.Server.Host, err, srv.tail()))
			}
		}()
		if c.Server.Ready > 0 {
			listening := func() (bool, error) { return files.Listening(c.Server.Host, srv.cmd.Process.Pid, c.Server.Ready) }
			if err := waitListening(ctx, listening, c.Server.Ready, exited); err != nil {
				return o, fmt.Errorf("the server on %s (%s): %w; its output: %s", c.Server.Host, c.Server.Run[0], err, srv.tail())
			}
		}
	}
	cctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	env.Expect(len(c.Clients))
	var wg sync.WaitGroup
	records := make([]job.Record, len(c.Clients))
	for i, cl := range c.Clients {
		wg.Go(func() {
			p := newProgram(cctx, env, cl.Host, dir(cl.Host), expand(cl.Host, cl.Run))
			r := job.Record{ID: i + 1, Host: cl.Host, Subject: cl.Run[0], Start: time.Now()}
			err := p.cmd.Run()
			r.End = time.Now()
			switch {
			case err == nil:
				r.Status = job.OK
			case cctx.Err() != nil && ctx.Err() == nil:
				r.Status, r.Reason = job.Timeout, fmt.Sprintf("still running after %v: %s", c.Timeout, p.tail())
			default:
				r.Status, r.Reason = job.Failed, fmt.Sprintf("%v: %s", err, p.tail())
			}
			env.Done(r)
			records[i] = r
		})
	}
	wg.Wait()
	o.Jobs = records
	for k, v := range kind.JobMetrics(records) {
		o.Metrics[k] = v
	}
	o.Metrics[results.Jobs] = float64(len(records))
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

func newProgram(ctx context.Context, env kind.Env, host, dir string, argv []string) *program {
	p := &program{cmd: env.Command(ctx, host, argv...), out: &tailBuffer{max: 2048}}
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

// waitListening waits until listening says the server listens on port,
// or until it exits.
func waitListening(ctx context.Context, listening func() (bool, error), port int, exited <-chan error) error {
	deadline := time.Now().Add(serverReady)
	for {
		if ok, err := listening(); err == nil && ok {
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
