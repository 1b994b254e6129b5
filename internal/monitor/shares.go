package monitor

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// Several service processes may share one archive and split a mesh
// between them: its pairs fall into Shares shares, and each process holds
// a lease on about its part of them, renewed through the archive. A
// process that stops renewing (killed, cut off) loses its leases after
// leaseTTL and the others take them over; one that stops cleanly gives
// them up at once. Throughput-class tests also lease their two hosts, so
// that no two processes test through one host at once.
const (
	Shares   = 16
	leaseTTL = 20 * time.Second
	// coordinateEvery is how often a process renews and rebalances.
	coordinateEvery = 5 * time.Second
)

// ShareOf is the share of a pair: every test of a pair in the same one.
func ShareOf(src, dst string) int {
	h := fnv.New32a()
	h.Write([]byte(src + "->" + dst))
	return int(h.Sum32() % Shares)
}

func shareName(i int) string { return fmt.Sprintf("share %d", i) }

// newOwner names this process among those sharing the archive.
func newOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%04x", host, os.Getpid(), rand.Uint32()&0xffff)
}

// coordinate renews this process's leases and rebalances the shares: it
// takes free or expired ones up to its part (Shares over the processes
// alive) and gives up what it holds beyond. While the archive is
// unreachable it keeps what it holds; if it never held any, it takes all,
// so that a lone service measures even without its archive.
func (s *Service) coordinate(ctx context.Context) {
	ar := s.opts.Store.Archive()
	s.mu.Lock()
	held := slices.Clone(s.owned)
	s.mu.Unlock()
	if ar == nil {
		if s.coordinated.IsZero() && len(held) == 0 {
			s.setOwned(allShares(), 1)
		}
		return
	}
	cctx, cancel := context.WithTimeout(ctx, coordinateEvery)
	defer cancel()
	expires := time.Now().Add(leaseTTL)
	alive, err := ar.Heartbeat(cctx, s.owner, expires)
	if err != nil {
		if s.coordinated.IsZero() && len(held) == 0 {
			s.setOwned(allShares(), 1)
		}
		return
	}
	target := (Shares + alive - 1) / alive
	var kept []int
	for _, i := range held {
		if err := ar.Claim(cctx, shareName(i), s.owner, expires); err == nil {
			kept = append(kept, i)
		}
	}
	for len(kept) > target {
		i := kept[len(kept)-1]
		if ar.Release(cctx, shareName(i), s.owner) != nil {
			break
		}
		kept = kept[:len(kept)-1]
	}
	// Start from a random share, so that processes starting together do
	// not all ask for the same ones first.
	first := rand.IntN(Shares)
	for k := 0; k < Shares && len(kept) < target; k++ {
		i := (first + k) % Shares
		if slices.Contains(kept, i) {
			continue
		}
		if err := ar.Claim(cctx, shareName(i), s.owner, expires); err == nil {
			kept = append(kept, i)
		} else if !errors.Is(err, archive.ErrLeaseHeld) {
			break
		}
	}
	slices.Sort(kept)
	s.coordinated = time.Now()
	s.setOwned(kept, alive)
}

func allShares() []int {
	out := make([]int, Shares)
	for i := range out {
		out[i] = i
	}
	return out
}

func (s *Service) setOwned(shares []int, members int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Equal(shares, s.owned) || members != s.members {
		who := "alone on the archive"
		if members > 1 {
			who = fmt.Sprintf("%d service processes share the archive", members)
		}
		s.logf("measuring %d of %d shares of the mesh (%s)", len(shares), Shares, who)
	}
	s.owned, s.members = shares, members
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// owns says whether this process measures a pair; s.mu is held.
func (s *Service) owns(src, dst string) bool {
	return s.opts.Viewer || slices.Contains(s.owned, ShareOf(src, dst))
}

// lockHosts leases a throughput-class test's two hosts in the archive for
// its budget; false if another process's test holds one. Without an
// archive it goes ahead: the agents' admission control still guards.
func (s *Service) lockHosts(ctx context.Context, j core.Job) (bool, time.Time) {
	ar := s.opts.Store.Archive()
	if ar == nil {
		return true, time.Time{}
	}
	expires := time.Now().Add(j.Test.Budget() + 30*time.Second)
	var got []string
	for _, h := range []string{j.Src, j.Dst} {
		if err := ar.Claim(ctx, "host "+h, s.owner, expires); err != nil {
			for _, g := range got {
				ar.Release(ctx, g, s.owner)
			}
			if errors.Is(err, archive.ErrLeaseHeld) {
				return false, time.Now().Add(5 * time.Second)
			}
			return true, time.Time{}
		}
		got = append(got, "host "+h)
	}
	return true, time.Time{}
}

func (s *Service) unlockHosts(ctx context.Context, j core.Job) {
	if ar := s.opts.Store.Archive(); ar != nil {
		for _, h := range []string{j.Src, j.Dst} {
			ar.Release(ctx, "host "+h, s.owner)
		}
	}
}
