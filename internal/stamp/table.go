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
	// ErrNotAllowed is a packet from a source the reflector's Allow
	// refuses.
	ErrNotAllowed = errors.New("the source is not among those the reflector answers")
)

// table is a bounded map whose entries are forgotten when unused for
// idle: a new key finds room by sweeping the idle ones out, at most once
// a second (so that a flood of new keys does not sweep at every packet).
type table[K comparable, V any] struct {
	max   int
	idle  time.Duration
	m     map[K]*entry[V]
	swept time.Time
}

type entry[V any] struct {
	v    V
	used time.Time
}

func newTable[K comparable, V any](max int, idle time.Duration) *table[K, V] {
	return &table[K, V]{max: max, idle: idle, m: map[K]*entry[V]{}}
}

// get is k's value, a new one (zero) if k is new and there is room; nil
// when there is none.
func (t *table[K, V]) get(k K, now time.Time) *V {
	e := t.m[k]
	if e == nil {
		if len(t.m) >= t.max && now.Sub(t.swept) >= time.Second {
			t.swept = now
			for k, e := range t.m {
				if now.Sub(e.used) >= t.idle {
					delete(t.m, k)
				}
			}
		}
		if len(t.m) >= t.max {
			return nil
		}
		e = &entry[V]{}
		t.m[k] = e
	}
	e.used = now
	return &e.v
}

// bucket is a token bucket: a source's allowance of packets.
type bucket struct {
	tokens float64
	at     time.Time
}

// limiter allows each source address rate packets a second, burst at
// once.
type limiter struct {
	rate, burst float64
	sources     *table[netip.Addr, bucket]
}

// allow takes a token of from's bucket: nil, or why not.
func (l *limiter) allow(from netip.Addr, now time.Time) error {
	b := l.sources.get(from, now)
	if b == nil {
		return ErrSessionLimit
	}
	if b.at.IsZero() {
		b.tokens = l.burst
	} else {
		b.tokens = min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	}
	b.at = now
	if b.tokens < 1 {
		return ErrRateLimit
	}
	b.tokens--
	return nil
}

// Refusal is what a reflector tells its audit of the packets it
// refused: the last one's source and why (an error errors.Is matches to
// ErrRateLimit, ErrSessionLimit, ErrTruncated, ErrTooLong, ErrAuth or
// ErrMalformed), and Count, the refusals for the same reason since the
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
var reasons = []error{ErrNotAllowed, ErrRateLimit, ErrSessionLimit, ErrTruncated, ErrTooLong, ErrAuth, ErrMalformed, ErrKey}

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
