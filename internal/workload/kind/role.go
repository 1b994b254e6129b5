package kind

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/job"
)

// Role is one of a kind's roles as an agent runs it (eventdb's server and
// clients, a task farm's master and workers, a mesh's nodes): the agent
// finds it by Name in the registry, decodes the request's JSON into a new
// Spec (unknown fields refused), validates it against the caller's limits,
// requires the test token every role opening connections carries, and
// runs it. The controller side starts it through Env.Start.
type Role struct {
	// Name is the role's name on the wire ("eventdb-server").
	Name string
	// Spec makes an empty spec (a pointer) for the request's JSON.
	Spec func() RoleSpec
	// Run runs the role with its decoded, validated spec, until its work
	// is done (or until the ctx that env.Serving returns is cancelled, for
	// a role that serves others). Its summary is sent to the controller,
	// also beside an error when the role did part of its work; a role that
	// ends well with a nil summary, not sent through env.Summary, sends {}.
	// An error wrapping ErrNoRoom is a refusal for want of room (busy); any
	// other is the agent's refusal of the request; both are audited.
	Run func(ctx context.Context, env RoleEnv, spec RoleSpec) (summary any, err error)
}

// NewRole makes the role name, whose spec is a *S that run runs with; a
// spec of another type is refused.
func NewRole[S any, P interface {
	*S
	RoleSpec
}](name string, run func(ctx context.Context, env RoleEnv, spec P) (summary any, err error)) Role {
	return Role{
		Name: name,
		Spec: func() RoleSpec { return P(new(S)) },
		Run: func(ctx context.Context, env RoleEnv, spec RoleSpec) (any, error) {
			s, ok := spec.(P)
			if !ok {
				return nil, fmt.Errorf("role %s with a %T spec", name, spec)
			}
			return run(ctx, env, s)
		},
	}
}

// RoleSpec is a role's settings as the controller sends them.
type RoleSpec interface {
	// Validate checks the spec against itself and the caller's limits.
	Validate(limits.Limits) error
}

// ErrNoRoom says a role was refused for want of room on its host (streams,
// disk), not for what it asked.
var ErrNoRoom = errors.New("no room on the host")

// RoleEnv is what an agent gives a role it runs.
type RoleEnv interface {
	// Host is the agent's host name; Limits are the caller's.
	Host() string
	Limits() limits.Limits
	// Test is where the role's listeners open (the agent's test address
	// and ports).
	Test() bind.Local
	// Listening tells the controller the port the role listens on.
	Listening(port int) error
	// Job sends one finished job to the controller.
	Job(job.Record)
	// Summary sends the role's summary now, for a role that serves on
	// after its own work is done (a mesh node serves its peers until
	// StopWorkload): its Run then returns a nil summary. Once only.
	Summary(v any) error
	// Serving registers the role as one StopWorkload ends, under its id:
	// the context it returns is cancelled then, or when the call ends.
	Serving() (context.Context, error)
	// Streams reserves n of the host's test streams until the role ends.
	Streams(n int) error
	// Folder is a folder of the agent's data directory for the role alone,
	// removed when the role ends; DiskCapped says the host's disk has a
	// rate cap.
	Folder() (*os.Root, error)
	DiskCapped() bool
}

// Started is a role that the controller started on a host (Env.Start).
type Started interface {
	// Address is where the role listens (host:port), for a role that
	// listens.
	Address() string
	// Summary reads the role's jobs, passing each to onJob, until its
	// summary, which it decodes into v.
	Summary(onJob func(job.Record), v any) error
	// Stop ends a serving role; Drain waits for its call to end.
	Stop(ctx context.Context) error
	Drain()
}
