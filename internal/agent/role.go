package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// errAgentFault marks a role's error that is the agent's own failure (its
// data folder), not a refusal of what the caller asked.
var errAgentFault = errors.New("the agent failed")

// decodeRoleSpec decodes a role's JSON spec into v, refusing unknown
// fields, and validates it against lim. With needToken, the spec must
// carry a test token: every role that opens connections does so with the
// test's token, which the controller draws for the step, and a role
// without one would serve or greet anyone who guessed the zero token.
func decodeRoleSpec(specJSON []byte, v interface{ Validate(limits.Limits) error }, lim limits.Limits, needToken bool) error {
	dec := json.NewDecoder(bytes.NewReader(specJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("reading its spec: %w", err)
	}
	if err := v.Validate(lim); err != nil {
		return err
	}
	if !needToken {
		return nil
	}
	var t struct {
		Token token.Token `json:"token"`
	}
	if json.Unmarshal(specJSON, &t) != nil || t.Token.IsZero() {
		return errors.New("its spec carries no test token")
	}
	return nil
}

// roleFolder names a role's folder in the data folder after its kind, its
// caller and its id: roles of two identities that share an id have a
// folder each, so neither writes into nor removes the other's, and the id
// the caller chose never becomes a path.
func roleFolder(ctx context.Context, prefix, role, id string) string {
	sum := sha256.Sum256([]byte(servingKey(ctx, id) + "\x00" + role))
	return prefix + "-" + hex.EncodeToString(sum[:16])
}

// runRole runs a role of a registered kind: its spec is decoded (unknown
// fields refused), validated against the caller's limits, and must carry
// the test's token; what the role holds (its serving registration, its
// streams, its folder) is given back when it ends. Its errors are
// refusals, audited as the call's end.
func (s workloadCalls) runRole(ctx context.Context, w *workloadStream, req *agentpb.WorkloadRequest, k kind.Kind, role kind.Role) error {
	lim := s.limitsOf(ctx)
	spec := role.Spec()
	if err := decodeRoleSpec(req.GetSpecJson(), spec, lim, true); err != nil {
		return s.refusal(req.GetRole(), err)
	}
	env := &roleEnv{s: s.Server, ctx: ctx, w: w, lim: lim, id: req.GetId(), role: role.Name, prefix: string(k.Name)}
	defer env.end()
	sum, err := role.Run(ctx, env, spec)
	switch {
	case sum != nil:
		if serr := env.Summary(sum); serr != nil && err == nil {
			return serr
		}
	case err == nil && !env.summarised():
		if serr := env.Summary(struct{}{}); serr != nil {
			return serr
		}
	}
	if err != nil {
		if errors.Is(err, errAgentFault) {
			return status.Errorf(codes.Internal, "agent on %s: %s: %v", s.Host, req.GetRole(), err)
		}
		return s.refusal(req.GetRole(), err)
	}
	return nil
}

// roleEnv is what the agent gives a role of a registered kind
// (kind.RoleEnv) for one call.
type roleEnv struct {
	s   *Server
	ctx context.Context // the call's
	w   *workloadStream
	lim limits.Limits
	// id is the caller's name for the role, role its name on the wire,
	// prefix its kind's name (the start of its folder's name).
	id, role, prefix string

	mu      sync.Mutex
	ends    []func() // what the role holds, given back in reverse at its end
	serving bool
	folder  *datadir.Dir
	sent    bool // its summary
}

var _ kind.RoleEnv = (*roleEnv)(nil)

func (e *roleEnv) Host() string             { return e.s.Host }
func (e *roleEnv) Limits() limits.Limits    { return e.lim }
func (e *roleEnv) Test() bind.Local         { return e.s.Test }
func (e *roleEnv) Listening(port int) error { return e.w.listening(port) }
func (e *roleEnv) Job(r job.Record)         { e.w.job(r) }
func (e *roleEnv) DiskCapped() bool         { return e.s.DiskCapped }

func (e *roleEnv) summarised() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sent
}

// Summary sends the role's summary, once.
func (e *roleEnv) Summary(v any) error {
	e.mu.Lock()
	if e.sent {
		e.mu.Unlock()
		return errors.New("its summary is sent already")
	}
	e.sent = true
	e.mu.Unlock()
	return e.w.summary(v)
}

// Serving registers the role under its caller's id for StopWorkload.
func (e *roleEnv) Serving() (context.Context, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.serving {
		return nil, errors.New("it registers as serving twice")
	}
	sctx, stop := context.WithCancel(e.ctx)
	remove, err := e.s.serving.add(servingKey(e.ctx, e.id), stop)
	if err != nil {
		stop()
		return nil, err
	}
	e.serving = true
	e.ends = append(e.ends, func() { remove(); stop() })
	return sctx, nil
}

// Streams reserves n of the host's test streams until the role ends.
func (e *roleEnv) Streams(n int) error {
	if n < 0 {
		return fmt.Errorf("%d streams: give 0 or more", n)
	}
	release, err := e.s.streams.reserve(n)
	if err != nil {
		return fmt.Errorf("%w: %w", kind.ErrNoRoom, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ends = append(e.ends, release)
	return nil
}

// Folder makes the role's folder of the data folder, once; it is removed
// when the role ends.
func (e *roleEnv) Folder() (*os.Root, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.folder != nil {
		return e.folder.Root(), nil
	}
	name := roleFolder(e.ctx, e.prefix, e.role, e.id)
	dir, err := e.s.Data.Sub(name)
	if err != nil {
		return nil, fmt.Errorf("%w: making the role's folder: %w", errAgentFault, err)
	}
	e.folder = dir
	e.ends = append(e.ends, func() { dir.Close(); e.s.Data.Remove(name) })
	return dir.Root(), nil
}

// end gives back what the role holds, last taken first.
func (e *roleEnv) end() {
	e.mu.Lock()
	ends := e.ends
	e.ends = nil
	e.mu.Unlock()
	for i := len(ends) - 1; i >= 0; i-- {
		ends[i]()
	}
}
