package agent

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Pacing of the audit lines that a caller can make the agent write at
// will (refusals before a call is authorised, connections refused in
// their handshake): past a burst, each key (an identity, or one key for
// all strangers) has its lines counted, not written, and the count is
// written in its next line or, if none comes, in a summary line within
// auditFlush.
const (
	auditLinesPerSecond = 10
	auditBurst          = 100
	auditFlush          = 10 * time.Second
	// maxAuditKeys bounds the keys paced at once; past it, those that
	// hold no count are forgotten (at most once every auditSweep), and
	// if all hold one, new keys share one (overflowKey).
	maxAuditKeys = 4096
	auditSweep   = time.Second
)

// auditPacer paces audit lines per key.
type auditPacer struct {
	// flush is how long a count may wait for a line (auditFlush if 0).
	flush time.Duration
	// summary writes the line of n lines of key held back.
	summary func(key string, n int64)
	// once sets flush and summary where they are set late.
	once sync.Once

	mu    sync.Mutex
	keys  map[string]*pacedKey
	swept time.Time // when keys were last swept
}

type pacedKey struct {
	lim   *rate.Limiter
	held  int64
	timer *time.Timer
}

// overflowKey is the key of every key past maxAuditKeys.
const overflowKey = "\x00others"

// allow says whether a line of key may be written now, and how many lines
// were held back since its last one (for the line to say), under the key
// it was counted under: key, or overflowKey when the keys are full. A line
// not allowed is counted.
func (p *auditPacer) allow(key string) (ok bool, held int64, counted string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.keys == nil {
		p.keys = map[string]*pacedKey{}
	}
	k := p.keys[key]
	if k == nil {
		if now := time.Now(); len(p.keys) >= maxAuditKeys && now.Sub(p.swept) >= auditSweep {
			// Forget the keys that hold nothing: they start again with a
			// full burst. At most once a sweep time, as a flood of new
			// keys would sweep on every line.
			p.swept = now
			for key, k := range p.keys {
				if k.timer == nil {
					delete(p.keys, key)
				}
			}
		}
		if len(p.keys) >= maxAuditKeys {
			key = overflowKey
			k = p.keys[key]
		}
		if k == nil {
			k = &pacedKey{lim: rate.NewLimiter(auditLinesPerSecond, auditBurst)}
			p.keys[key] = k
		}
	}
	if k.lim.Allow() {
		held, k.held = k.held, 0
		return true, held, key
	}
	k.held++
	if k.timer == nil {
		flush := p.flush
		if flush <= 0 {
			flush = auditFlush
		}
		k.timer = time.AfterFunc(flush, func() { p.flushKey(key, k) })
	}
	return false, 0, key
}

// flushKey writes the summary of what key holds, if anything.
func (p *auditPacer) flushKey(key string, k *pacedKey) {
	p.mu.Lock()
	n := k.held
	k.held, k.timer = 0, nil
	p.mu.Unlock()
	if n > 0 && p.summary != nil {
		p.summary(key, n)
	}
}
