package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// TransferSpecToPB converts a transfer spec to its wire form.
func TransferSpecToPB(s transfer.Spec) *agentpb.TransferSpec {
	return &agentpb.TransferSpec{Streams: uint32(s.Streams), WindowBytes: uint64(s.Window), Block: uint32(s.Block), Compress: s.Compress}
}

func transferSpecFromPB(p *agentpb.TransferSpec) transfer.Spec {
	return transfer.Spec{Streams: int(p.GetStreams()), Window: int(p.GetWindowBytes()), Block: int(p.GetBlock()), Compress: p.GetCompress()}
}

// workDir is where the agent keeps the files it generates and receives.
func (s *Server) workDir() (string, error) {
	dir := filepath.Join(os.TempDir(), "wanlab-transfer-"+s.Host)
	return dir, os.MkdirAll(dir, 0o755)
}

func (s *Server) transferSpec(p *agentpb.TransferSpec) (transfer.Spec, error) {
	spec := transferSpecFromPB(p)
	spec.Uncached = s.DiskCapped
	if err := spec.Validate(s.Limits.MaxStreams); err != nil {
		return spec, status.Errorf(codes.InvalidArgument, "agent on %s refuses the transfer: %v", s.Host, err)
	}
	return spec, nil
}

// ReceiveFile accepts one transfer and reports the file's checksum.
func (s *Server) ReceiveFile(req *agentpb.ReceiveFileRequest, stream agentpb.Agent_ReceiveFileServer) error {
	spec, err := s.transferSpec(req.GetSpec())
	if err != nil {
		return err
	}
	path := req.GetPath()
	if path == "" {
		dir, err := s.workDir()
		if err != nil {
			return status.Errorf(codes.Internal, "agent on %s: %v", s.Host, err)
		}
		f, err := os.CreateTemp(dir, "received-*")
		if err != nil {
			return status.Errorf(codes.Internal, "agent on %s: %v", s.Host, err)
		}
		path = f.Name()
		f.Close()
	}
	r, err := transfer.Listen(spec)
	if err != nil {
		return status.Error(codes.Unavailable, err.Error())
	}
	r.CorruptAt = req.GetCorruptAt()
	if err := stream.Send(&agentpb.TransferEvent{Event: &agentpb.TransferEvent_Listening{Listening: &agentpb.Listening{Port: uint32(r.Port)}}}); err != nil {
		return err
	}
	cpu := s.startCPU()
	res, err := r.Run(stream.Context(), path)
	if !req.GetKeep() || err != nil {
		os.Remove(path)
	}
	if err != nil {
		return status.Errorf(codes.Aborted, "agent on %s: receiving into %s: %v", s.Host, path, err)
	}
	return stream.Send(&agentpb.TransferEvent{Event: &agentpb.TransferEvent_Result{Result: s.transferResult(res, path, cpu)}})
}

// SendFile sends a file, generating it first if asked for a size.
func (s *Server) SendFile(ctx context.Context, req *agentpb.SendFileRequest) (*agentpb.TransferResult, error) {
	spec, err := s.transferSpec(req.GetSpec())
	if err != nil {
		return nil, err
	}
	path := req.GetPath()
	if path == "" {
		size := int64(req.GetSize())
		if size <= 0 || size > s.Limits.MaxBytes {
			return nil, status.Errorf(codes.InvalidArgument, "agent on %s refuses the transfer: size %d must be between 1 and %d bytes", s.Host, size, s.Limits.MaxBytes)
		}
		dir, err := s.workDir()
		if err != nil {
			return nil, status.Errorf(codes.Internal, "agent on %s: %v", s.Host, err)
		}
		path = filepath.Join(dir, fmt.Sprintf("source-%d", size))
		defer os.Remove(path)
		if err := transfer.MakeFile(path, size); err != nil {
			return nil, status.Errorf(codes.ResourceExhausted, "agent on %s: making a %d-byte file in %s: %v", s.Host, size, dir, err)
		}
	} else if req.GetRemoveAfter() {
		defer os.Remove(path)
	}
	cpu := s.startCPU()
	res, err := transfer.Send(ctx, spec, path, req.GetAddress())
	if err != nil {
		return nil, status.Errorf(codes.Aborted, "agent on %s: sending %s: %v", s.Host, path, err)
	}
	return s.transferResult(res, path, cpu), nil
}

func (s *Server) transferResult(r transfer.Result, path string, cpu cpuMark) *agentpb.TransferResult {
	p := &agentpb.TransferResult{Bytes: uint64(r.Bytes), WireBytes: uint64(r.WireBytes), Seconds: r.Seconds, Sha256: r.SHA256, Path: path}
	for _, n := range r.Streams {
		p.StreamBytes = append(p.StreamBytes, uint64(n))
	}
	p.AgentCpuPercent, p.HostCpuPercent = s.cpuSince(cpu)
	return p
}
