package monitor

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
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

// shares are this process's part of the mesh, among those sharing the
// archive, and the leases of its throughput-class tests' hosts
// (runner.Shares).
type shares struct {
	store  *Store
	owner  string // names this process among those sharing the archive
	viewer bool   // a viewer owns every pair: it measures none
	logf   func(format string, args ...any)
	// changed is told when the shares change (the runners look again).
	changed func()

	mu sync.Mutex
	// owned are the shares this process measures, members how many
	// processes share the archive.
	owned       []int
	members     int
	coordinated time.Time
}

// coordinate renews this process's leases and rebalances the shares: it
// takes free or expired ones up to its part (Shares over the processes
// alive) and gives up what it holds beyond. While the archive is
// unreachable it keeps what it holds; if it never held any, it takes all,
// so that a lone service measures even without its archive.
func (sh *shares) coordinate(ctx context.Context) {
	ar := sh.store.Archive()
	sh.mu.Lock()
	held, coordinated := slices.Clone(sh.owned), sh.coordinated
	sh.mu.Unlock()
	if ar == nil {
		if coordinated.IsZero() && len(held) == 0 {
			sh.set(allShares(), 1)
		}
		return
	}
	cctx, cancel := context.WithTimeout(ctx, coordinateEvery)
	defer cancel()
	expires := time.Now().Add(leaseTTL)
	alive, err := ar.Heartbeat(cctx, sh.owner, expires)
	if err != nil {
		if coordinated.IsZero() && len(held) == 0 {
			sh.set(allShares(), 1)
		}
		return
	}
	target := (Shares + alive - 1) / alive
	var kept []int
	for _, i := range held {
		if err := ar.Claim(cctx, shareName(i), sh.owner, expires); err == nil {
			kept = append(kept, i)
		}
	}
	for len(kept) > target {
		i := kept[len(kept)-1]
		if ar.Release(cctx, shareName(i), sh.owner) != nil {
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
		if err := ar.Claim(cctx, shareName(i), sh.owner, expires); err == nil {
			kept = append(kept, i)
		} else if !errors.Is(err, archive.ErrLeaseHeld) {
			break
		}
	}
	slices.Sort(kept)
	sh.mu.Lock()
	sh.coordinated = time.Now()
	sh.mu.Unlock()
	sh.set(kept, alive)
}

func allShares() []int {
	out := make([]int, Shares)
	for i := range out {
		out[i] = i
	}
	return out
}

func (sh *shares) set(owned []int, members int) {
	sh.mu.Lock()
	changed := !slices.Equal(owned, sh.owned) || members != sh.members
	sh.owned, sh.members = owned, members
	sh.mu.Unlock()
	if changed {
		who := "alone on the archive"
		if members > 1 {
			who = fmt.Sprintf("%d service processes share the archive", members)
		}
		sh.logf("measuring %d of %d shares of the mesh (%s)", len(owned), Shares, who)
	}
	if sh.changed != nil {
		sh.changed()
	}
}

// view is this process's name, the shares it measures and how many
// processes share the archive.
func (sh *shares) view() (owner string, owned []int, members int) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.owner, slices.Clone(sh.owned), sh.members
}

// Owns says whether this process measures a pair.
func (sh *shares) Owns(src, dst string) bool {
	if sh.viewer {
		return true
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return slices.Contains(sh.owned, ShareOf(src, dst))
}

// Lock leases a throughput-class test's two hosts in the archive for its
// budget; false if another process's test holds one. Without an archive
// it goes ahead: the agents' admission control still guards.
func (sh *shares) Lock(ctx context.Context, src, dst string, budget time.Duration) (bool, time.Time) {
	ar := sh.store.Archive()
	if ar == nil {
		return true, time.Time{}
	}
	expires := time.Now().Add(budget)
	var got []string
	for _, h := range []string{src, dst} {
		if err := ar.Claim(ctx, "host "+h, sh.owner, expires); err != nil {
			for _, g := range got {
				ar.Release(ctx, g, sh.owner)
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

// Unlock gives a test's hosts' leases up.
func (sh *shares) Unlock(ctx context.Context, src, dst string) {
	if ar := sh.store.Archive(); ar != nil {
		for _, h := range []string{src, dst} {
			ar.Release(ctx, "host "+h, sh.owner)
		}
	}
}

// leave gives the shares up at once, as the service stops: the other
// processes take them over at their next round rather than when the
// leases expire.
func (sh *shares) leave() {
	if ar := sh.store.Archive(); ar != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ar.Leave(ctx, sh.owner)
	}
}
