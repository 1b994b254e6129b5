package agentapi

import (
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A refusal for tests at once is told apart from the other limits'
// refusals, which share its code, wrapped or not.
func TestIsTooManyTests(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"tests at once", TooManyTests("agent on %s refuses: %d tests at once", "h", 2), true},
		{"wrapped", fmt.Errorf("probing: %w", TooManyTests("no")), true},
		{"bytes of the day", status.Error(codes.ResourceExhausted, "1000 bytes a day"), false},
		{"not a status", fmt.Errorf("tests at once"), false},
		{"nil", nil, false},
	} {
		if got := IsTooManyTests(tc.err); got != tc.want {
			t.Errorf("%s: IsTooManyTests(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
	if got := status.Code(TooManyTests("x")); got != codes.ResourceExhausted {
		t.Errorf("TooManyTests has code %v, want ResourceExhausted", got)
	}
}
