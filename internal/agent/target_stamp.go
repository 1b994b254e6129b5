package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/stamp"
)

// A stamp call: a STAMP session (RFC 8762, unauthenticated mode) toward a
// reflector that runs no agent, through package stamp's sender.

// session is a stamp call's session, its spec's zero fields at the
// defaults ping has (the base packet's size), or why its spec is out of
// bounds.
func (t *targetCall) session() (stamp.Session, error) {
	sp := t.req.GetProbe()
	s := stamp.Session{Count: int(sp.GetCount()), Interval: time.Duration(sp.GetIntervalNs()), Timeout: time.Duration(sp.GetTimeoutNs()),
		Size: int(sp.GetSize()), Network: "udp6"}
	if t.addr.Is4() {
		s.Network = "udp4"
	}
	s.Count = orDefault(s.Count, defaultProbes)
	s.Interval = orDefault(s.Interval, defaultProbeInterval)
	s.Timeout = orDefault(s.Timeout, defaultProbeTimeout)
	s.Size = orDefault(s.Size, stamp.BaseLen)
	if err := s.Validate(); err != nil {
		return s, err
	}
	return s, nil
}

// sessionBytes is what a session sends (its packets, UDP and IP headers
// included); the replies are as many again.
func (t *targetCall) sessionBytes(s stamp.Session) (packet, all int64) {
	packet = int64(s.Size) + 8 + 20
	if !t.addr.Is4() {
		packet += 20
	}
	return packet, int64(s.Count) * packet
}

// sessionLimits are a session's length (its sending, then the last
// packet's timeout), bytes and rate, for the guard.
func (t *targetCall) sessionLimits(s stamp.Session) (lasts time.Duration, bytes int64, bps float64) {
	packet, all := t.sessionBytes(s)
	return time.Duration(s.Count-1)*s.Interval + s.Timeout, all, float64(packet*8) / s.Interval.Seconds()
}

// runSTAMP runs a stamp call's session and reports each packet as a
// probe: the reflector's receive and send times on its own clock.
func (s targetCalls) runSTAMP(ctx context.Context, t *targetCall) (*agentpb.TargetResult, error) {
	sess, err := t.session()
	if err != nil {
		return nil, s.refusal(t.what(), err)
	}
	got, err := sess.Run(ctx, t.dest())
	if err != nil && len(got.Packets) == 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "agent on %s: %s toward %s: %v", s.Host, t.what(), t.dest(), err)
	}
	packet, _ := t.sessionBytes(sess)
	res := &agentpb.TargetResult{Kind: t.kind, Address: t.dest(), Reordered: uint32(got.Reordered), Duplicates: uint32(got.Duplicates),
		Invalid: uint32(got.Invalid), Synchronised: got.Synchronized, Bytes: uint64(len(got.Packets)) * uint64(packet), Probes: &agentpb.ProbeSummary{}}
	for _, p := range got.Packets {
		r := &agentpb.ProbeResult{Seq: p.Seq, SentNs: p.Sent.UnixNano(), Duplicates: uint32(p.Duplicates)}
		if !p.Lost() {
			r.ReceivedNs, r.ReflectRxNs, r.ReflectTxNs = p.Received.UnixNano(), p.ReflectorRx.UnixNano(), p.ReflectorTx.UnixNano()
		}
		res.Probes.Results = append(res.Probes.Results, r)
	}
	switch {
	case errors.Is(err, stamp.ErrNoReply):
		res.Silent, res.Error = true, err.Error()
	case err != nil:
		res.Error = err.Error()
		res.Probes.Partial, res.Probes.Error = true, res.Error
	}
	if got.FirstInvalid != nil && res.Error == "" {
		res.Error = fmt.Sprintf("%d datagrams were no valid reply; the first: %v", got.Invalid, got.FirstInvalid)
	}
	return res, nil
}
