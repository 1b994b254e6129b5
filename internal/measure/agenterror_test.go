package measure

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
)

// An agent's refusal for its identity's tests at once is ErrTooManyTests,
// naming the host, in the words the agent's other refusals are in; other
// limits' refusals are not.
func TestAgentErrorTooManyTests(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		words string
		too   bool
	}{
		{"tests at once", agentapi.TooManyTests("2 tests at once"), "agent on h: 2 tests at once", true},
		{"bytes of the day", status.Error(codes.ResourceExhausted, "1000 bytes a day"), "agent on h: 1000 bytes a day", false},
		{"no answer", status.Error(codes.Unavailable, "gone"), "the agent on h stopped answering (killed, or its host went away): gone", false},
	} {
		err := AgentError("h", tc.err)
		var te *TooManyTestsError
		if err.Error() != tc.words || errors.Is(err, ErrTooManyTests) != tc.too || errors.As(fmt.Errorf("x: %w", err), &te) != tc.too {
			t.Errorf("%s: AgentError = %q (ErrTooManyTests: %v), want %q (%v)", tc.name, err, errors.Is(err, ErrTooManyTests), tc.words, tc.too)
		}
		if tc.too && te.Host != "h" {
			t.Errorf("%s: the refusal names host %q, want h", tc.name, te.Host)
		}
	}
}
