// Package kind is the vocabulary of a workload kind: what a kind registers
// (its name, how a step's settings are decoded and checked, how a step is
// run) and what the scenario and the controller hand it in return (a
// Check, an Env). A kind is one package under internal/workload that
// declares a Kind; internal/workload/kinds lists them. This package knows
// no kind, no scenario, no controller and no backend.
package kind

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// Kind is everything wanlab knows about one kind of workload.
//
// Its Roles are what agents run for it, its Traits what the analysis, the
// report and wanlab run's summary read of it (its findings, plots and
// summary columns), its Model what the simulated backend (wanlab predict)
// runs in its place.
type Kind struct {
	// Name is the kind's key in a scenario's workload (command:).
	Name results.Kind
	// Decode reads one step's settings: it decodes them with decode into
	// the kind's raw form (a pointer to a struct with yaml tags) and
	// checks them through c, reporting every problem there. It returns the
	// step's spec (also when c was told of problems: the scenario then
	// refuses the file), or nil when nothing decoded.
	Decode func(decode Decoder, c Check) Spec
	// Run runs one step of the kind and says what it measured. An error
	// with an Outcome that holds jobs, figures or samples is a partial
	// step; without, a failed one.
	Run func(ctx context.Context, env Env, s Spec) (*Outcome, error)
	// Roles are the roles the kind's steps run in agents, if any.
	Roles []Role
	// Traits are what the analysis and the report know of the kind's
	// workloads (its findings, its plots), as data.
	Traits Traits
	// Model is the kind's simulation model; nil when it has none (wanlab
	// predict then refuses its steps, saying so).
	Model *Model
}

// RunWith makes a kind's Run from run, which takes the kind's own spec
// type S: a spec of another type is refused as "what with a T spec" (what
// such as "a probe step").
func RunWith[S Spec](what string, run func(context.Context, Env, S) (*Outcome, error)) func(context.Context, Env, Spec) (*Outcome, error) {
	return func(ctx context.Context, env Env, spec Spec) (*Outcome, error) {
		s, ok := spec.(S)
		if !ok {
			return nil, fmt.Errorf("%s with a %T spec", what, spec)
		}
		return run(ctx, env, s)
	}
}

// Decoder decodes a step's settings into raw (a pointer to the kind's raw
// struct), reporting at their lines the settings that do not decode
// (unknown, of the wrong type); it returns false when there is nothing
// left to check.
type Decoder func(raw any) bool

// Spec is one step of a kind, as its settings made it.
type Spec interface {
	// Length is how long the step lasts when its settings say (a
	// duration, a count of probes); 0 when it ends as its work is done.
	Length() time.Duration
	// RoleHosts are the hosts of each of the step's roles ("server",
	// "client"), whose CPU figures the controller averages per role.
	RoleHosts() map[string][]string
}

// Check is what a kind checks a step's settings with: the scenario's
// validator, which says every problem at once, each at the line of its
// setting. Fields are relative to the step's settings ("timeout",
// "clients[0].host"; "" is the kind's mapping itself).
type Check interface {
	// Fail records a problem at field.
	Fail(field, format string, args ...any)
	// Host checks a reference to a host of the test-bed.
	Host(field, name string)
	// Reaches refuses, at field, host a that must reach host b and cannot.
	Reaches(field, a, b string)
	// Hosts are the test-bed's hosts, in the scenario's order; AllReach
	// refuses, at field, the pairs of hosts that cannot reach each other.
	Hosts() []string
	AllReach(field string, hosts []string)
	// RealHosts says the test-bed's hosts are real ones, behind agents on
	// the network, not emulated.
	RealHosts() bool
	// Duration, Size and Count parse a setting, or give def when it is
	// not set; Count checks the range [lo, hi].
	Duration(field, s string, def time.Duration) time.Duration
	Size(field, s string, def int64) int64
	Count(field string, n *int, def, lo, hi int) int
	// Limits are the limits workloads are checked against before anything
	// runs (an agent's defaults); Limit records a limit's refusal, if any.
	Limits() limits.Limits
	Limit(field string, err error)
	// Problems counts the problems found so far in the whole file: a
	// check of the spec as a whole (a role's Validate) runs only when
	// its fields' checks added none, not to say a problem twice.
	Problems() int
}

// Env is what a step runs with: the hosts, as the controller reaches them
// on whatever backend it drives.
type Env interface {
	// Addr is a host's test address.
	Addr(host string) string
	// Command prepares argv to run in a host (its namespace and cgroups on
	// the emulated backend).
	Command(ctx context.Context, host string, argv ...string) *exec.Cmd
	// Files are the hosts' data directories, when they are on this
	// machine (the emulated backend); nil otherwise.
	Files() Files
	// Expect adds n to the jobs the step's progress expects; Done counts
	// one that ended, ok or not.
	Expect(n int)
	Done(r job.Record)
	// Seed is the step's (the scenario's plus its place in the run); ID is
	// unique among the run's steps (for role ids); Token opens the
	// connections of the step's roles.
	Seed() uint64
	ID() string
	Token() token.Token
	// Start starts role (one of the kind's Roles) on host, with spec (sent
	// as JSON) under id; for a role that listens it returns once the role
	// listens.
	Start(ctx context.Context, host, id, role string, spec RoleSpec, listens bool) (Started, error)
	// Bottleneck is the rate, in bit/s, that from's traffic to host to can
	// get as the test-bed is built (to's site access link, the lower of its
	// two directions, for a host in a site; else the path's bottleneck);
	// 0 when nothing limits it or it is not known.
	Bottleneck(from, to string) float64
}

// Files are hosts' data directories on this machine: the folder each
// host's programs run in (the methods of backend.HostFiles).
type Files interface {
	// DataDir is a host's data directory.
	DataDir(host string) (string, error)
	// MakeFile makes a file in a host's data directory, never through a
	// link: text when size is 0, else size bytes of generated data,
	// dropped from the page cache so that the first read comes from disk.
	MakeFile(ctx context.Context, host, name string, size int64, text string) error
	// Listening says whether process pid, in host, has a TCP socket
	// listening on port.
	Listening(host string, pid, port int) (bool, error)
}

// Outcome is what one step measured: named figures and jobs of its own
// (the controller adds the test-bed's samples and figures), and what
// happened on the way.
type Outcome struct {
	Metrics results.Metrics
	Jobs    []job.Record
	// Samples are the step's time series (a test's intervals, probes' round
	// trips), beside those the controller samples from the test-bed.
	Samples []results.Sample
	// Events are warnings worth keeping with the step; Notes what else
	// happened.
	Events, Notes []string
}
