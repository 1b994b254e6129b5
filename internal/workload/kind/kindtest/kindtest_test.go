package kindtest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/token"
)

func TestCheck(t *testing.T) {
	n := func(i int) *int { return &i }
	for _, tc := range []struct {
		name  string
		check func(c *Check)
		want  []string
	}{
		{"known hosts that reach each other", func(c *Check) { c.Host("h", "a"); c.Reaches("h", "a", "b"); c.AllReach("hs", []string{"a", "b"}) }, nil},
		{"a missing host", func(c *Check) { c.Host("h", "") }, []string{"h: missing: name a host of the test-bed"}},
		{"an unknown host", func(c *Check) { c.Host("h", "z") }, []string{`h: unknown host "z" (hosts: a, b, off)`}},
		{"a host cut off", func(c *Check) { c.Reaches("h", "a", "off") }, []string{"h: hosts a and off cannot reach each other"}},
		{"all reach, said once", func(c *Check) { c.AllReach("hs", []string{"a", "b", "off"}) }, []string{"hs: hosts a and off cannot reach each other"}},
		{"a count out of range", func(c *Check) { c.Count("n", n(0), 1, 1, 9) }, []string{"n: 0 is out of range: from 1 to 9"}},
		{"a bad size and duration", func(c *Check) { c.Size("s", "lots", 0); c.Duration("d", "soon", 0) }, []string{"s: ", "d: "}},
		{"a limit", func(c *Check) { c.Limit("l", errors.New("too much")) }, []string{"l: too much (an agent's default limit)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Check{HostNames: []string{"a", "b", "off"}, Cut: []string{"off"}}
			tc.check(c)
			c.Want(t, tc.want...)
			if c.Problems() != len(tc.want) {
				t.Errorf("%d problems counted, want %d", c.Problems(), len(tc.want))
			}
		})
	}
}

// echoSpec is a toy role's spec.
type echoSpec struct {
	Token token.Token `json:"token"`
	Say   string      `json:"say"`
}

func (s *echoSpec) Validate(limits.Limits) error {
	if s.Say == "" {
		return errors.New("nothing to say")
	}
	return nil
}

var echoKind = kind.Kind{Name: "echo", Roles: []kind.Role{{
	Name: "echo",
	Spec: func() kind.RoleSpec { return &echoSpec{} },
	Run: func(ctx context.Context, env kind.RoleEnv, spec kind.RoleSpec) (any, error) {
		return spec.(*echoSpec).Say + " from " + env.Host(), nil
	},
}}}

func TestEnvStartsRolesAsAnAgent(t *testing.T) {
	env := NewEnv(t, echoKind)
	env.Down = []string{"gone"}
	for _, tc := range []struct {
		name, host, role string
		spec             kind.RoleSpec
		want             string // the summary, or a part of the error
	}{
		{"a role", "h1", "echo", &echoSpec{Token: env.Token(), Say: "hi"}, "hi from h1"},
		{"an invalid spec", "h1", "echo", &echoSpec{Token: env.Token()}, "nothing to say"},
		{"no token", "h1", "echo", &echoSpec{Say: "hi"}, "carries no test token"},
		{"an unknown role", "h1", "other", &echoSpec{Token: env.Token(), Say: "hi"}, `unknown workload role "other"`},
		{"a host down", "gone", "echo", &echoSpec{Token: env.Token(), Say: "hi"}, "agent on gone: unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := env.Start(context.Background(), tc.host, "id", tc.role, tc.spec, false)
			if err != nil {
				if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %v, want one saying %q", err, tc.want)
				}
				return
			}
			var got string
			if err := r.Summary(func(job.Record) {}, &got); err != nil || got != tc.want {
				t.Errorf("summary %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if got := env.Started(); len(got) != 1 || got[0].Host != "h1" || got[0].Name != "echo" {
		t.Errorf("started %+v", got)
	}
}
