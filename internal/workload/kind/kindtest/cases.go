package kindtest

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// CheckCase is one case of a kind's check (its Check func): the settings
// as written, and either the problems found, in order, each a prefix of
// "field: message", or, when none, the step they make.
type CheckCase[R, S any] struct {
	Name string
	Raw  R
	Want []string
	Step *S
}

// RunChecks runs check on each case, on an emulated test-bed of hosts, as
// a subtest of its name; a step is compared with reflect.DeepEqual.
func RunChecks[R, S any](t *testing.T, hosts []string, check func(kind.Check, R) *S, cases []CheckCase[R, S]) {
	t.Helper()
	RunChecksOn(t, func() *Check { return NewCheck(hosts...) }, check, cases)
}

// RunChecksOn is RunChecks on the test-bed of the Check that bed makes
// afresh for each case (one with hosts cut off, or of real hosts).
func RunChecksOn[R, S any](t *testing.T, bed func() *Check, check func(kind.Check, R) *S, cases []CheckCase[R, S]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			c := bed()
			s := check(c, tc.Raw)
			c.Want(t, tc.Want...)
			if tc.Step != nil && !reflect.DeepEqual(s, tc.Step) {
				t.Errorf("step %+v, want %+v", s, *tc.Step)
			}
		})
	}
}

// SpecCase is one case of a role's spec's Validate: Edit makes a fine spec
// wrong (or leaves it fine), Want is a part of the error Validate then
// gives ("" for none), and Is, when set, an error it wraps.
type SpecCase[S any] struct {
	Name string
	Edit func(*S)
	Want string
	Is   error
}

// RunValidates validates, against the default limits, the spec fine makes
// afresh for each case, edited by the case, as a subtest of its name.
func RunValidates[S any, P interface {
	*S
	kind.RoleSpec
}](t *testing.T, fine func() S, cases []SpecCase[S]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			s := fine()
			tc.Edit(&s)
			err := P(&s).Validate(limits.Default)
			switch {
			case tc.Want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.Want != "" && (err == nil || !strings.Contains(err.Error(), tc.Want)):
				t.Fatalf("got %v, want an error with %q", err, tc.Want)
			case tc.Is != nil && !errors.Is(err, tc.Is):
				t.Errorf("error %v does not wrap %v", err, tc.Is)
			}
		})
	}
}
