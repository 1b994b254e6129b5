package agent

import (
	"context"
	"os"
	"path/filepath"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/workload/disk"
)

// Disk runs a sequential write and read test on the agent's host.
func (s *Server) Disk(ctx context.Context, req *agentpb.DiskRequest) (*agentpb.DiskResult, error) {
	spec := disk.Spec{Dir: req.GetDir(), Size: int64(req.GetSize()), Block: int(req.GetBlock()), Fsync: req.GetFsync(), Direct: req.GetDirect()}
	if spec.Dir == "" {
		spec.Dir = filepath.Join(os.TempDir(), "wanlab-disk-"+s.Host)
	}
	// Buffered writes reach a capped disk later, from the kernel's flusher,
	// outside the host's cgroup: fsync makes the write phase pay the cap.
	spec.Fsync = spec.Fsync || s.DiskCapped
	if err := spec.Validate(s.Limits.MaxBytes); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "agent on %s refuses the disk test: %v", s.Host, err)
	}
	r, err := disk.Run(spec)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "agent on %s: %v", s.Host, err)
	}
	return &agentpb.DiskResult{
		WriteBytesPerSecond: r.WriteBytesPerSecond, ReadBytesPerSecond: r.ReadBytesPerSecond,
		WriteSeconds: r.WriteSeconds, ReadSeconds: r.ReadSeconds, Bytes: uint64(r.Bytes), CacheDropped: r.CacheDropped, Dir: spec.Dir, Fsync: spec.Fsync,
	}, nil
}
