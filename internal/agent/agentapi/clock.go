package agentapi

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
)

// ClockStepped is the agent's answer to probes the host's clock stepped
// during: codes.Aborted with the summary, partial and saying so, as its
// detail, which ClockStepOf finds again on the controller's side.
func ClockStepped(sum *agentpb.ProbeSummary) error {
	st, err := status.New(codes.Aborted, sum.Error).WithDetails(sum)
	if err != nil {
		return status.Error(codes.Aborted, sum.Error)
	}
	return st.Err()
}

// ClockStepOf is the summary of probes whose host's clock stepped during
// them, from the error of a Probe call; false if err is not one.
func ClockStepOf(err error) (*agentpb.ProbeSummary, bool) {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Aborted {
		return nil, false
	}
	for _, d := range st.Details() {
		if sum, ok := d.(*agentpb.ProbeSummary); ok {
			return sum, true
		}
	}
	return nil, false
}
