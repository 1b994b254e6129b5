package agent

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/stamp"
)

// STAMP is how an agent answers STAMP (RFC 8762) and TWAMP-light test
// packets, so that tools other than wanlab (a router's or perfSONAR's
// sender) can measure the path to its host.
type STAMP struct {
	// From are the networks whose packets are answered: a reflector
	// answers whoever sends, so it names them, as a policy names peers.
	From []netip.Prefix
	// Key selects authenticated mode (HMAC-SHA-256); none:
	// unauthenticated.
	Key []byte
}

// ServeSTAMP answers the STAMP packets arriving on conn from the
// networks st names until ctx ends, at most stamp.DefaultMaxRate a
// second from one source and stamp.DefaultMaxTotalRate from all, and at
// most stamp.DefaultMaxAddrSessions sessions of one source address (its
// ports); it audits what it refuses (a source it does not answer, a
// flood, a sender's ports past its sessions, a forged or malformed
// packet), at most once a second for each reason with the count.
func (s *Server) ServeSTAMP(ctx context.Context, conn *net.UDPConn, st STAMP) error {
	if len(st.From) == 0 {
		return fmt.Errorf("STAMP reflector on %v: no network to answer: name them", conn.LocalAddr())
	}
	r, err := stamp.NewReflector(stamp.ReflectorConfig{
		Key: st.Key,
		Allow: func(a netip.Addr) bool {
			for _, p := range st.From {
				if p.Contains(a) {
					return true
				}
			}
			return false
		},
		Audit: func(ref stamp.Refusal) {
			if s.Audit == nil {
				return
			}
			s.Audit(audit.Entry{Time: time.Now().UTC(), Remote: ref.From.String(), Method: "stamp", Kind: "stamp",
				Decision: "refuse", Reason: fmt.Sprintf("%v (%d packets)", ref.Err, ref.Count)})
		},
	})
	if err != nil {
		return fmt.Errorf("STAMP reflector: %w", err)
	}
	if err := r.Serve(ctx, conn); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
