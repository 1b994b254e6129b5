package kind

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
)

type otherSpec struct{}

func (otherSpec) Length() time.Duration          { return 0 }
func (otherSpec) RoleHosts() map[string][]string { return nil }

func TestRunWith(t *testing.T) {
	run := RunWith("a toy step", func(_ context.Context, _ Env, s *toySpec) (*Outcome, error) {
		return &Outcome{Notes: []string{strings.Repeat("x", s.n)}}, nil
	})
	if o, err := run(context.Background(), nil, &toySpec{n: 2}); err != nil || o.Notes[0] != "xx" {
		t.Errorf("its own spec: %+v, %v", o, err)
	}
	if _, err := run(context.Background(), nil, otherSpec{}); err == nil || err.Error() != "a toy step with a kind.otherSpec spec" {
		t.Errorf("another spec: %v", err)
	}
}

type toyRoleSpec struct{ Say string }

func (*toyRoleSpec) Validate(limits.Limits) error { return nil }

func TestNewRole(t *testing.T) {
	r := NewRole("toy", func(_ context.Context, _ RoleEnv, s *toyRoleSpec) (any, error) { return s.Say, nil })
	spec, ok := r.Spec().(*toyRoleSpec)
	if r.Name != "toy" || !ok {
		t.Fatalf("role %q with a %T spec", r.Name, r.Spec())
	}
	spec.Say = "hi"
	if got, err := r.Run(context.Background(), nil, spec); got != "hi" || err != nil {
		t.Errorf("its own spec: %v, %v", got, err)
	}
	if _, err := r.Run(context.Background(), nil, limitsSpec{}); err == nil || !strings.Contains(err.Error(), "role toy with a kind.limitsSpec spec") {
		t.Errorf("another spec: %v", err)
	}
}

type limitsSpec struct{}

func (limitsSpec) Validate(limits.Limits) error { return nil }
