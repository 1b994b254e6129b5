package agent

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/workload/disk"
)

// Disk runs a sequential write and read test in the agent's data folder.
func (s fileCalls) Disk(ctx context.Context, req *agentpb.DiskRequest) (*agentpb.DiskResult, error) {
	spec := disk.Spec{Dir: s.Data.Root(), Size: int64(min(req.GetSize(), 1<<63-1)), Block: int(req.GetBlock()), Fsync: req.GetFsync(), Direct: req.GetDirect()}
	// Buffered writes reach a capped disk later, from the kernel's flusher,
	// outside the host's cgroup: fsync makes the write phase pay the cap.
	spec.Fsync = spec.Fsync || s.DiskCapped
	if err := spec.Validate(s.limitsOf(ctx)); err != nil {
		return nil, s.refusal("the disk test", err)
	}
	// The test ends with its call: a controller that is gone, or a call
	// past its deadline, stops it within a block.
	r, err := disk.Run(ctx, spec)
	if err != nil {
		code := codes.Internal
		if ctx.Err() != nil {
			code = status.FromContextError(ctx.Err()).Code()
		}
		return nil, status.Errorf(code, "agent on %s: %v", s.Host, err)
	}
	return &agentpb.DiskResult{
		WriteBytesPerSecond: r.WriteBytesPerSecond, ReadBytesPerSecond: r.ReadBytesPerSecond,
		WriteSeconds: r.WriteSeconds, ReadSeconds: r.ReadSeconds, Bytes: uint64(r.Bytes), CacheDropped: r.CacheDropped, Dir: s.Data.Path(), Fsync: spec.Fsync,
	}, nil
}
