package measure

import (
	"context"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
)

// Disk asks a host's agent for a sequential write and read test.
func Disk(ctx context.Context, host Endpoint, req *agentpb.DiskRequest) (*agentpb.DiskResult, error) {
	ctx = AsTest(ctx)
	res, err := host.Agent.Disk(ctx, req)
	if err != nil {
		return nil, AgentError(host.Host, err)
	}
	return res, nil
}
