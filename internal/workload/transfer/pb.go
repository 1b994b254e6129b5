package transfer

import "github.com/wanlab/wanlab/internal/agent/agentpb"

// SpecToPB converts a transfer spec to its wire form (agentpb). What the
// agent decides itself (Uncached, ReadRate) does not travel.
func SpecToPB(s Spec) *agentpb.TransferSpec {
	return &agentpb.TransferSpec{Streams: uint32(s.Streams), WindowBytes: uint64(s.Window), Block: uint32(s.Block), Compress: s.Compress, Serial: s.Serial}
}

// SpecFromPB converts a wire transfer spec back.
func SpecFromPB(p *agentpb.TransferSpec) Spec {
	return Spec{Streams: int(p.GetStreams()), Window: int(p.GetWindowBytes()), Block: int(p.GetBlock()), Compress: p.GetCompress(), Serial: p.GetSerial()}
}
