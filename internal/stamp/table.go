package stamp

import (
	"errors"
	"net/netip"
	"time"
)

// Refusals of a reflector, matched with errors.Is (besides the packet
// errors: ErrTruncated, ErrTooLong, ErrAuth, ErrMalformed).
var (
	// ErrRateLimit is a packet from a source sending faster than the
	// reflector's MaxRate.
	ErrRateLimit = errors.New("the source sends faster than the reflector's rate limit")
	// ErrSessionLimit is a packet of a new session (or source) when the
	// reflector tracks as many as it may, none of them idle.
	ErrSessionLimit = errors.New("the reflector tracks as many sessions as it may")
	// ErrAddrSessionLimit is a packet of a new session from a source
	// address that has as many sessions as one address may (its other
	// ports'), none of them idle.
	ErrAddrSessionLimit = errors.New("the source address has as many sessions as the reflector allows one address")
	// ErrTotalRateLimit is a packet past the reflector's rate over all
	// sources (MaxTotalRate).
	ErrTotalRateLimit = errors.New("the reflector answers as many packets a second as it may, all sources together")
	// ErrNotAllowed is a packet from a source the reflector's Allow
	// refuses.
	ErrNotAllowed = errors.New("the source is not among those the reflector answers")
)

// table is a bounded map whose entries are forgotten when unused for
// idle: a new key finds room by sweeping the idle ones out, at most once
// a second (so that a flood of new keys does not sweep at every packet).
// With groupOf set, it also bounds the keys of one group (a source
// address's sessions) at perGroup.
type table[K comparable, V any] struct {
	max   int
	idle  time.Duration
	m     map[K]*entry[V]
	swept time.Time

	groupOf  func(K) netip.Addr
	perGroup int
	groups   map[netip.Addr]int
}

type entry[V any] struct {
	v    V
	used time.Time
}

func newTable[K comparable, V any](max int, idle time.Duration) *table[K, V] {
	return &table[K, V]{max: max, idle: idle, m: map[K]*entry[V]{}}
}

// grouped bounds the keys of each group of t at most.
func (t *table[K, V]) grouped(of func(K) netip.Addr, most int) *table[K, V] {
	t.groupOf, t.perGroup, t.groups = of, most, map[netip.Addr]int{}
	return t
}

// get is k's value, a new one (zero) if k is new and there is room; or
// why there is none: ErrSessionLimit (the table is full) or
// ErrAddrSessionLimit (k's group is).
func (t *table[K, V]) get(k K, now time.Time) (*V, error) {
	e := t.m[k]
	if e == nil {
		err := t.room(k)
		if err != nil && now.Sub(t.swept) >= time.Second {
			t.swept = now
			for k, e := range t.m {
				if now.Sub(e.used) >= t.idle {
					t.remove(k)
				}
			}
			err = t.room(k)
		}
		if err != nil {
			return nil, err
		}
		e = &entry[V]{}
		t.m[k] = e
		if t.groupOf != nil {
			t.groups[t.groupOf(k)]++
		}
	}
	e.used = now
	return &e.v, nil
}

// room says whether a new key k may be added, or why not.
func (t *table[K, V]) room(k K) error {
	switch {
	case len(t.m) >= t.max:
		return ErrSessionLimit
	case t.groupOf != nil && t.groups[t.groupOf(k)] >= t.perGroup:
		return ErrAddrSessionLimit
	}
	return nil
}

func (t *table[K, V]) remove(k K) {
	delete(t.m, k)
	if t.groupOf != nil {
		g := t.groupOf(k)
		if t.groups[g]--; t.groups[g] <= 0 {
			delete(t.groups, g)
		}
	}
}

// bucket is a token bucket: a source's allowance of packets.
type bucket struct {
	tokens float64
	at     time.Time
}

// take takes a token of the bucket, which fills at rate a second up to
// burst: false when it has none.
func (b *bucket) take(rate, burst float64, now time.Time) bool {
	if b.at.IsZero() {
		b.tokens = burst
	} else {
		b.tokens = min(burst, b.tokens+now.Sub(b.at).Seconds()*rate)
	}
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// limiter allows each source address rate packets a second, burst at
// once, and all sources together totalRate a second, totalBurst at once.
type limiter struct {
	rate, burst           float64
	sources               *table[netip.Addr, bucket]
	totalRate, totalBurst float64
	total                 bucket
}

// allow takes a token of from's bucket, then one of all sources': nil, or
// why not. A source over its own rate takes nothing of the others'.
func (l *limiter) allow(from netip.Addr, now time.Time) error {
	b, err := l.sources.get(from, now)
	if err != nil {
		return err
	}
	if !b.take(l.rate, l.burst, now) {
		return ErrRateLimit
	}
	if !l.total.take(l.totalRate, l.totalBurst, now) {
		return ErrTotalRateLimit
	}
	return nil
}

// Refusal is what a reflector tells its audit of the packets it
// refused: the last one's source and why (an error errors.Is matches to
// ErrRateLimit, ErrTotalRateLimit, ErrSessionLimit, ErrAddrSessionLimit,
// ErrTruncated, ErrTooLong, ErrAuth or ErrMalformed), and Count, the refusals for the same reason since the
// last report, this one included.
type Refusal struct {
	From  netip.AddrPort
	Err   error
	Count int
}

// auditor reports refusals, at most one a reason each interval: a flood
// of refused packets makes one report a second, not one a packet.
type auditor struct {
	report   func(Refusal)
	interval time.Duration
	pending  map[error]*pendingRefusal // by reason: a sentinel error
}

type pendingRefusal struct {
	last     Refusal
	reported time.Time
}

func (a *auditor) refuse(reason error, from netip.AddrPort, err error, now time.Time) {
	if a.report == nil {
		return
	}
	p := a.pending[reason]
	if p == nil {
		p = &pendingRefusal{}
		a.pending[reason] = p
	}
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port()) // an IPv4 sender of a dual-stack socket
	p.last = Refusal{From: from, Err: err, Count: p.last.Count + 1}
	if p.reported.IsZero() || now.Sub(p.reported) >= a.interval {
		a.report(p.last)
		p.last, p.reported = Refusal{}, now
	}
}

// flush reports the refusals not reported yet.
func (a *auditor) flush() {
	for _, p := range a.pending {
		if p.last.Count > 0 {
			a.report(p.last)
			p.last = Refusal{}
		}
	}
}

// reasons are the sentinels a refusal is counted under.
var reasons = []error{ErrNotAllowed, ErrRateLimit, ErrTotalRateLimit, ErrSessionLimit, ErrAddrSessionLimit, ErrTruncated, ErrTooLong, ErrAuth, ErrMalformed, ErrKey}

// reasonOf is err's sentinel (ErrMalformed when it has none, so that
// the reasons stay few).
func reasonOf(err error) error {
	for _, r := range reasons {
		if errors.Is(err, r) {
			return r
		}
	}
	return ErrMalformed
}
