package runner

import (
	"time"

	"github.com/wanlab/wanlab/internal/monitor/core"
)

// Backoff bounds of a host that does not answer.
const (
	firstBackoff = 5 * time.Second
	maxBackoff   = 5 * time.Minute
)

// backoff is the hosts whose agents do not answer, and until when each is
// left alone: from firstBackoff, doubling to maxBackoff while the host
// keeps failing. The runners' lock (r.mu) guards it.
type backoff map[string]*core.HostDown

// failed notes that h failed at now; first says whether it was answering
// until then.
func (b backoff) failed(h string, err error, now time.Time) (first bool) {
	d := b[h]
	if d == nil {
		d = &core.HostDown{Since: now, Backoff: firstBackoff}
		b[h] = d
		first = true
	} else if now.After(d.Until) {
		d.Backoff = min(2*d.Backoff, maxBackoff)
	}
	d.Until, d.Reason = now.Add(d.Backoff), err.Error()
	return first
}

// answered notes that h answers; down is how long it did not, 0 if it did.
func (b backoff) answered(h string, now time.Time) (down time.Duration) {
	d := b[h]
	if d == nil {
		return 0
	}
	delete(b, h)
	return max(now.Sub(d.Since), time.Nanosecond)
}

// blocked says whether one of hosts may not be tried at now, and until
// when.
func (b backoff) blocked(now time.Time, hosts ...string) (until time.Time, down bool) {
	for _, h := range hosts {
		if d := b[h]; d != nil && now.Before(d.Until) {
			until, down = core.Later(until, d.Until), true
		}
	}
	return until, down
}
