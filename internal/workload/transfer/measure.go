package transfer

import (
	"context"
	"errors"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/measure"
)

// The controller's side of a transfer: a file sent between two hosts'
// agents, and back if asked (Measure).

// Options are a transfer between two hosts' agents: its streams and
// blocks (Spec), and the file.
type Options struct {
	Spec
	// File names a file in the sending agent's data folder; if empty, the
	// sender generates one of Size bytes.
	File string
	Size int64
	// Roundtrip sends the received copy back, as the ALICE tests did.
	Roundtrip bool
	// CorruptAt flips the byte at this offset at the receiver before the
	// checksum (a self-test of the check); -1 for none.
	CorruptAt int64
	// OnLeg, if set, is told as each leg starts.
	OnLeg func(from, to string)
}

// Leg is one direction of a transfer.
type Leg struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Family is the address family the leg's streams used: "ipv4" or
	// "ipv6", that of the receiver's address.
	Family        string  `json:"family,omitempty"`
	Bytes         uint64  `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	BitsPerSecond float64 `json:"bits_per_second"` // file bytes over the receiver's time
	WireBytes     uint64  `json:"wire_bytes"`
	// CompressionRatio is file bytes over bytes on the wire (1 without --compress).
	CompressionRatio float64           `json:"compression_ratio"`
	StreamBytes      []uint64          `json:"stream_bytes"`
	SHA256Sent       string            `json:"sha256_sent"`
	SHA256Received   string            `json:"sha256_received"`
	ChecksumOK       bool              `json:"checksum_ok"`
	CPU              measure.CPUResult `json:"cpu_utilization_percent"`
	// Alongside is the most other tests either end's agent ran meanwhile.
	Alongside int `json:"tests_alongside"`
}

// Summary is a transfer and, for a round trip, its way back.
type Summary struct {
	Streams  int  `json:"num_streams"`
	Compress bool `json:"compress"`
	There    *Leg `json:"there"`
	Back     *Leg `json:"back,omitempty"`
	// ChecksumOK says that every copy matched the original.
	ChecksumOK bool   `json:"checksum_ok"`
	Partial    bool   `json:"partial"`
	Error      string `json:"error,omitempty"`
}

// ErrChecksum means a copy did not match the original.
var ErrChecksum = errors.New("checksum mismatch: the copy differs from the original")

// Measure runs a transfer from src to dst, and back if asked.
func Measure(ctx context.Context, src, dst measure.Endpoint, spec Options) (*Summary, error) {
	ctx = measure.AsTest(ctx)
	res := &Summary{Streams: spec.Streams, Compress: spec.Compress}
	fail := func(err error) (*Summary, error) {
		res.Partial, res.Error = true, err.Error()
		return res, err
	}
	there, kept, err := measureLeg(ctx, src, dst, spec, &agentpb.SendFileRequest{File: spec.File, Size: uint64(spec.Size)}, uint64(spec.Size), spec.Roundtrip, spec.CorruptAt)
	res.There = there
	if err != nil {
		return fail(err)
	}
	res.ChecksumOK = there.ChecksumOK
	if spec.Roundtrip {
		back, _, err := measureLeg(ctx, dst, src, spec, &agentpb.SendFileRequest{File: kept, RemoveAfter: true}, there.Bytes, false, -1)
		res.Back = back
		if err != nil {
			return fail(err)
		}
		// The copy that came back must match what left in the first place.
		back.ChecksumOK = back.SHA256Received == there.SHA256Sent
		res.ChecksumOK = res.ChecksumOK && back.ChecksumOK
	}
	if !res.ChecksumOK {
		return fail(ErrChecksum)
	}
	return res, nil
}

// measureLeg sends one file from src to dst, of size bytes if known (else 0), and
// returns the name under which dst kept it (if keep).
func measureLeg(ctx context.Context, src, dst measure.Endpoint, spec Options, send *agentpb.SendFileRequest, size uint64, keep bool, corruptAt int64) (*Leg, string, error) {
	l := &Leg{From: src.Host, To: dst.Host}
	if spec.OnLeg != nil {
		spec.OnLeg(src.Host, dst.Host)
	}
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	rstream, err := dst.Agent.ReceiveFile(rctx, &agentpb.ReceiveFileRequest{Spec: SpecToPB(spec.Spec), Keep: keep, CorruptAt: corruptAt, ExpectedSize: size})
	if err != nil {
		return l, "", measure.AgentError(dst.Host, err)
	}
	var listen *agentpb.Listening
	if send.Address, listen, err = measure.Listening(dst, rstream.Recv); err != nil {
		return l, "", err
	}
	l.Family = measure.FamilyOf(send.Address)
	send.Token = listen.GetToken()
	send.Spec = SpecToPB(spec.Spec)
	sent, err := src.Agent.SendFile(ctx, send)
	if err != nil {
		return l, "", measure.AgentError(src.Host, err)
	}
	ev, err := rstream.Recv()
	if err != nil {
		return l, "", measure.AgentError(dst.Host, err)
	}
	got := ev.GetResult()
	l.Bytes, l.Seconds, l.WireBytes, l.StreamBytes = got.Bytes, got.Seconds, sent.WireBytes, got.StreamBytes
	if got.Seconds > 0 {
		l.BitsPerSecond = float64(got.Bytes) * 8 / got.Seconds
	}
	if sent.WireBytes > 0 {
		l.CompressionRatio = float64(sent.Bytes) / float64(sent.WireBytes)
	}
	l.SHA256Sent, l.SHA256Received = sent.Sha256, got.Sha256
	l.ChecksumOK = sent.Sha256 != "" && sent.Sha256 == got.Sha256 && sent.Bytes == got.Bytes
	l.CPU = measure.CPUResult{SenderHost: sent.HostCpuPercent, SenderAgent: sent.AgentCpuPercent, ReceiverHost: got.HostCpuPercent, ReceiverAgent: got.AgentCpuPercent}
	l.Alongside = int(max(sent.Alongside, got.Alongside))
	return l, got.File, nil
}
