package kindtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// Env runs a step of Kind in this process (kind.Env): Start runs one of
// the kind's roles as an agent would, its spec sent through JSON (unknown
// fields refused), validated against the default limits and required to
// carry the test's token, each host's roles listening on its address.
type Env struct {
	t    testing.TB
	Kind kind.Kind
	// Addrs are the hosts' test addresses; 127.0.0.1 for a host not
	// listed. Down are hosts whose agents cannot be reached.
	Addrs map[string]string
	Down  []string
	// Bottlenecks are the rates Bottleneck says, by [from, to].
	Bottlenecks map[[2]string]float64
	// Tok is the step's token.
	Tok token.Token

	mu       sync.Mutex
	expected int
	done     []job.Record
	started  []*Role
}

var _ kind.Env = (*Env)(nil)

// NewEnv is an Env for a step of k, with a token of its own.
func NewEnv(t testing.TB, k kind.Kind) *Env { return &Env{t: t, Kind: k, Tok: token.New()} }

func (e *Env) Addr(host string) string {
	if a, ok := e.Addrs[host]; ok {
		return a
	}
	return "127.0.0.1"
}

// Command runs argv on this machine, whatever the host.
func (e *Env) Command(ctx context.Context, host string, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

func (e *Env) Files() kind.Files                  { return nil }
func (e *Env) Expect(n int)                       { e.mu.Lock(); e.expected += n; e.mu.Unlock() }
func (e *Env) Done(r job.Record)                  { e.mu.Lock(); e.done = append(e.done, r); e.mu.Unlock() }
func (e *Env) Seed() uint64                       { return 1 }
func (e *Env) ID() string                         { return "step0" }
func (e *Env) Token() token.Token                 { return e.Tok }
func (e *Env) Bottleneck(from, to string) float64 { return e.Bottlenecks[[2]string{from, to}] }

// Expected is how many jobs the step said to expect; Jobs are those it
// counted done.
func (e *Env) Expected() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.expected
}

func (e *Env) Jobs() []job.Record {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.done)
}

// Started are the roles started, in the order they were.
func (e *Env) Started() []*Role {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.started)
}

// Start runs the kind's role name on host under id; for a role that
// listens, it returns once the role listens.
func (e *Env) Start(ctx context.Context, host, id, name string, spec kind.RoleSpec, listens bool) (kind.Started, error) {
	if slices.Contains(e.Down, host) {
		return nil, fmt.Errorf("agent on %s: unreachable", host)
	}
	i := slices.IndexFunc(e.Kind.Roles, func(r kind.Role) bool { return r.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("agent on %s: unknown workload role %q", host, name)
	}
	role := e.Kind.Roles[i]
	got, err := decode(role, spec)
	if err != nil {
		return nil, fmt.Errorf("agent on %s: %s: %w", host, name, err)
	}
	side := &roleEnv{env: e, host: host, addr: e.Addr(host), listening: make(chan int, 1),
		summarised: make(chan struct{}), ended: make(chan struct{})}
	side.serving, side.stop = context.WithCancel(ctx)
	r := &Role{Host: host, ID: id, Name: name, Spec: got, side: side}
	e.mu.Lock()
	e.started = append(e.started, r)
	e.mu.Unlock()
	go side.run(ctx, role, got)
	if !listens {
		return r, nil
	}
	select {
	case port := <-side.listening:
		r.address = net.JoinHostPort(side.addr, strconv.Itoa(port))
		return r, nil
	case <-side.ended:
		return nil, fmt.Errorf("agent on %s: %s: %w", host, name, side.err)
	}
}

// decode sends spec through JSON into the role's own spec, as an agent
// reads it.
func decode(role kind.Role, spec kind.RoleSpec) (kind.RoleSpec, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	got := role.Spec()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(got); err != nil {
		return nil, fmt.Errorf("reading its spec: %w", err)
	}
	if err := got.Validate(limits.Default); err != nil {
		return nil, err
	}
	var t struct {
		Token token.Token `json:"token"`
	}
	if json.Unmarshal(b, &t) != nil || t.Token.IsZero() {
		return nil, errors.New("its spec carries no test token")
	}
	return got, nil
}

// Role is one role running in this process, as the controller sees it
// (kind.Started).
type Role struct {
	Host, ID, Name string
	Spec           kind.RoleSpec
	address        string
	side           *roleEnv
}

var _ kind.Started = (*Role)(nil)

// roleEnv is the agent's side of a role (kind.RoleEnv).
type roleEnv struct {
	env       *Env
	host      string
	addr      string
	listening chan int
	serving   context.Context
	stop      context.CancelFunc

	mu         sync.Mutex
	jobs       []job.Record
	streams    int
	summary    any
	err        error
	sent       bool
	summarised chan struct{} // its summary is sent, or it ended
	ended      chan struct{}
}

var _ kind.RoleEnv = (*roleEnv)(nil)

func (r *roleEnv) run(ctx context.Context, role kind.Role, spec kind.RoleSpec) {
	defer close(r.ended)
	defer r.stop()
	sum, err := role.Run(ctx, r, spec)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.sent {
		r.summary, r.err, r.sent = sum, err, true
		close(r.summarised)
	} else if err != nil {
		r.err = err
	}
}

func (r *roleEnv) Host() string          { return r.host }
func (r *roleEnv) Limits() limits.Limits { return limits.Default }
func (r *roleEnv) Test() bind.Local      { return bind.Local{Addr: r.addr} }
func (r *roleEnv) DiskCapped() bool      { return false }

func (r *roleEnv) Listening(port int) error {
	select {
	case r.listening <- port:
		return nil
	default:
		return errors.New("it says where it listens twice")
	}
}

func (r *roleEnv) Job(j job.Record) { r.mu.Lock(); r.jobs = append(r.jobs, j); r.mu.Unlock() }

// Summary sends the role's summary before it ends, once.
func (r *roleEnv) Summary(v any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sent {
		return errors.New("its summary is sent already")
	}
	r.summary, r.sent = v, true
	close(r.summarised)
	return nil
}

// Serving is cancelled by the controller's Stop, or as the role ends.
func (r *roleEnv) Serving() (context.Context, error) { return r.serving, nil }

func (r *roleEnv) Streams(n int) error { r.mu.Lock(); r.streams = n; r.mu.Unlock(); return nil }

// Folder is a temporary folder of the test's.
func (r *roleEnv) Folder() (*os.Root, error) {
	if r.env.t == nil {
		return nil, errors.New("no folders without a test")
	}
	return testsupport.TempRoot(r.env.t), nil
}

// Address is where the role listens, for one that does.
func (r *Role) Address() string { return r.address }

// Summary passes on the role's jobs once its summary is sent, then decodes
// the summary into v through JSON.
func (r *Role) Summary(onJob func(job.Record), v any) error {
	<-r.side.summarised
	r.side.mu.Lock()
	jobs, sum, err := slices.Clone(r.side.jobs), r.side.summary, r.side.err
	r.side.mu.Unlock()
	for _, j := range jobs {
		onJob(j)
	}
	if err != nil {
		return err
	}
	b, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Stop ends a serving role; Drain waits for it to end.
func (r *Role) Stop(context.Context) error { r.side.stop(); return nil }
func (r *Role) Drain()                     { <-r.side.ended }

// Ended says whether the role has ended.
func (r *Role) Ended() bool {
	select {
	case <-r.side.ended:
		return true
	default:
		return false
	}
}

// Streams are the test streams the role reserved.
func (r *Role) Streams() int {
	r.side.mu.Lock()
	defer r.side.mu.Unlock()
	return r.side.streams
}
