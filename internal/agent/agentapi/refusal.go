package agentapi

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// An agent's refusal of a call because the caller's identity runs as many
// tests at once as its policy allows (limits.tests) says so in an
// ErrorInfo detail of its status: its code, ResourceExhausted, is every
// limit's, and a caller may ask again as soon as one of its tests ends,
// which is not so of its bytes of the day.
const (
	// errorDomain is the domain of the agent's ErrorInfo reasons (as
	// farend.ErrorDomain, for a far end's refusals).
	errorDomain = "wanlab.agent"
	// ReasonTooManyTests is the reason of TooManyTests.
	ReasonTooManyTests = "TOO_MANY_TESTS"
)

// TooManyTests is the agent's refusal, in words, of a call whose
// identity runs as many tests at once as its policy allows.
func TooManyTests(format string, args ...any) error {
	st := status.Newf(codes.ResourceExhausted, format, args...)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: ReasonTooManyTests, Domain: errorDomain}); err == nil {
		return d.Err()
	}
	return st.Err()
}

// IsTooManyTests says whether err, a call's, is an agent's TooManyTests
// refusal.
func IsTooManyTests(err error) bool {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.ResourceExhausted {
		return false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == errorDomain && info.GetReason() == ReasonTooManyTests {
			return true
		}
	}
	return false
}
