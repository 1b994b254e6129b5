package runner

import (
	"errors"
	"testing"
	"time"
)

// A host that keeps failing is left alone twice as long each time, up to
// maxBackoff; one that answers is tried again at once.
func TestBackoff(t *testing.T) {
	b := backoff{}
	now := time.Now()
	down := errors.New("connection refused")
	if !b.failed("a", down, now) {
		t.Error("a first failure is not the first")
	}
	if until, ok := b.blocked(now, "a", "b"); !ok || !until.Equal(now.Add(firstBackoff)) {
		t.Errorf("blocked after a failure: %v %v, want until %v", until, ok, now.Add(firstBackoff))
	}
	if _, ok := b.blocked(now, "b"); ok {
		t.Error("a host that never failed is blocked")
	}
	want := firstBackoff
	for range 10 {
		now = b["a"].Until.Add(time.Millisecond)
		if b.failed("a", down, now) {
			t.Error("a repeated failure is the first")
		}
		want = min(2*want, maxBackoff)
		if got := b["a"].Backoff; got != want {
			t.Fatalf("backoff %s, want %s", got, want)
		}
	}
	if d := b.answered("a", now.Add(time.Minute)); d <= 0 {
		t.Errorf("answered after being down: %s", d)
	}
	if _, ok := b.blocked(now, "a"); ok || b.answered("a", now) != 0 {
		t.Error("a host that answers is still down")
	}
}
