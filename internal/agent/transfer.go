package agent

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/workload/token"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// Files the agent names itself, in its data folder.
const (
	receivedPrefix  = "received"
	generatedPrefix = "generated"
)

// keptFiles are the received files the agent keeps for a later SendFile
// (a round trip), and so may remove on request.
type keptFiles struct {
	mu    sync.Mutex
	names map[string]bool
}

// keepFor is how long a kept file waits to be sent back before the agent
// removes it: a controller that died mid round trip leaves nothing behind.
const keepFor = 10 * time.Minute

func (k *keptFiles) add(name string, remove func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.names == nil {
		k.names = map[string]bool{}
	}
	k.names[name] = true
	time.AfterFunc(keepFor, func() {
		if k.take(name) {
			remove()
		}
	})
}

// take forgets name and says whether the agent had kept it.
func (k *keptFiles) take(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	ok := k.names[name]
	delete(k.names, name)
	return ok
}

// transferSpec checks a transfer's spec and reserves its streams.
func (s fileCalls) transferSpec(ctx context.Context, p *agentpb.TransferSpec) (transfer.Spec, func(), error) {
	spec := transfer.SpecFromPB(p)
	spec.Uncached = s.DiskCapped
	spec.ReadRate = s.DiskReadBps
	if err := spec.Validate(s.limitsOf(ctx)); err != nil {
		return spec, nil, s.refusal("the transfer", err)
	}
	release, err := s.streams.take(s.Host, spec.Streams)
	return spec, release, err
}

// ReceiveFile accepts one transfer into a new file of the agent's data
// folder and reports the file's checksum. A kept file is named in the
// result; any other is removed once hashed.
func (s fileCalls) ReceiveFile(req *agentpb.ReceiveFileRequest, stream agentpb.Agent_ReceiveFileServer) error {
	ctx := stream.Context()
	lim := s.limitsOf(ctx)
	spec, release, err := s.transferSpec(ctx, req.GetSpec())
	if err != nil {
		return err
	}
	defer release()
	expected := req.GetExpectedSize()
	if err := lim.Bytes("the transfer", int64(min(expected, 1<<63-1))); err != nil {
		return s.refusal("the transfer", err)
	}
	name := datadir.NewName(receivedPrefix)
	out, err := s.Data.Create(name)
	if err != nil {
		return status.Errorf(codes.Internal, "agent on %s: %v", s.Host, err)
	}
	defer out.Close()
	keep := false
	defer func() {
		if !keep {
			s.Data.Remove(name)
		}
	}()
	r, err := transfer.Listen(spec, s.Test, lim.MaxBytes)
	if err != nil {
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	r.CorruptAt, r.ExpectedSize = req.GetCorruptAt(), int64(expected)
	if err := stream.Send(&agentpb.TransferEvent{Event: &agentpb.TransferEvent_Listening{Listening: s.listening(ctx, r.Port, r.Token)}}); err != nil {
		r.Close()
		return err
	}
	cpu := s.startCPU()
	res, err := r.Run(stream.Context(), out)
	if err != nil {
		return status.Errorf(codes.Aborted, "agent on %s: receiving into %s: %v", s.Host, s.Data.Path(), err)
	}
	result := s.transferResult(res, cpu)
	if req.GetKeep() {
		keep = true
		s.kept.add(name, func() { s.Data.Remove(name) })
		result.File = name
	}
	return stream.Send(&agentpb.TransferEvent{Event: &agentpb.TransferEvent_Result{Result: result}})
}

// SendFile sends a file of the agent's data folder: one it generates of the
// requested size, one it kept from an earlier transfer, or one put there on
// its host. Only a file it kept may be removed afterwards.
func (s fileCalls) SendFile(ctx context.Context, req *agentpb.SendFileRequest) (*agentpb.TransferResult, error) {
	lim := s.limitsOf(ctx)
	spec, release, err := s.transferSpec(ctx, req.GetSpec())
	if err != nil {
		return nil, err
	}
	defer release()
	name := req.GetFile()
	var f *os.File
	switch {
	case name == "":
		size := int64(min(req.GetSize(), 1<<63-1))
		if size <= 0 {
			return nil, s.refusal("the transfer", fmt.Errorf("give a file or a size"))
		}
		if err := lim.Bytes("the file", size); err != nil {
			return nil, s.refusal("the transfer", err)
		}
		name = datadir.NewName(generatedPrefix)
		if f, err = s.Data.Create(name); err != nil {
			return nil, status.Errorf(codes.Internal, "agent on %s: %v", s.Host, err)
		}
		defer s.Data.Remove(name)
		// Making the file ends with the call, as the transfer does.
		if err := transfer.MakeFile(ctx, f, size); err != nil {
			f.Close()
			if ctx.Err() != nil {
				return nil, status.Errorf(status.FromContextError(ctx.Err()).Code(), "agent on %s: %v", s.Host, err)
			}
			return nil, status.Errorf(codes.ResourceExhausted, "agent on %s: making a %d-byte file in %s: %v", s.Host, size, s.Data.Path(), err)
		}
	case req.GetRemoveAfter() && !s.kept.take(name):
		return nil, s.refusal("the transfer", fmt.Errorf("remove_after is only for a file the agent kept itself, and %q is not one", name))
	default:
		if req.GetRemoveAfter() {
			defer s.Data.Remove(name)
		}
		if f, err = s.Data.OpenFile(name, os.O_RDONLY); err != nil {
			return nil, s.refusal("the transfer", err)
		}
		if fi, err := f.Stat(); err == nil {
			if err := lim.Bytes("the file", fi.Size()); err != nil {
				f.Close()
				return nil, s.refusal("the transfer", err)
			}
		}
	}
	defer f.Close()
	cpu := s.startCPU()
	tok, err := token.Parse(req.GetToken())
	if err != nil {
		return nil, s.refusal("the transfer", err)
	}
	res, err := transfer.Send(ctx, spec, f, req.GetAddress(), tok)
	if err != nil {
		return nil, status.Errorf(codes.Aborted, "agent on %s: sending %s: %v", s.Host, name, err)
	}
	return s.transferResult(res, cpu), nil
}

func (s fileCalls) transferResult(r transfer.Result, cpu cpuMark) *agentpb.TransferResult {
	p := &agentpb.TransferResult{Bytes: uint64(r.Bytes), WireBytes: uint64(r.WireBytes), Seconds: r.Seconds, Sha256: r.SHA256}
	for _, n := range r.Streams {
		p.StreamBytes = append(p.StreamBytes, uint64(n))
	}
	p.AgentCpuPercent, p.HostCpuPercent = s.cpuSince(cpu)
	return p
}
