package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/testsupport"
)

// logs collects a store's messages.
type logs struct {
	mu  sync.Mutex
	all []string
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, fmt.Sprintf(format, args...))
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// deadPostgres is a postgres:// URL of a loopback port where nothing listens.
func deadPostgres(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "postgres://wanlab:secret@" + addr + "/wanlab?sslmode=disable&connect_timeout=2"
}

func points(at time.Time, n int) []core.Point {
	var out []core.Point
	for i := range n {
		out = append(out, core.Point{T: at.Add(time.Duration(i) * time.Second), Src: "a", Dst: "b", Test: "lat", Metric: "rtt_median_seconds", Value: float64(i)})
	}
	return out
}

// An archive away at the start: results wait in the buffer, in order,
// and all land once it answers.
func TestStoreBuffersAndReplays(t *testing.T) {
	live := testsupport.PostgresSchema(t)
	var l logs
	s, err := OpenStore(deadPostgres(t), t.TempDir(), 1<<20, l.logf)
	if err != nil {
		t.Fatalf("a PostgreSQL archive away at the start must not stop the service: %v", err)
	}
	defer s.Close()
	t0 := time.Now().Add(-time.Minute)
	for i := range 10 {
		s.Put(record{At: t0, Points: points(t0.Add(time.Duration(i)*time.Second), 3)})
	}
	al := core.Alert{Ref: "r1", Rule: core.RuleRTTStep, Src: "a", Dst: "b", Test: "lat", Started: t0, Message: "m"}
	s.Put(record{At: t0, Open: &al})
	s.Put(record{At: t0, Close: &closed{Ref: "r1", Ended: t0.Add(time.Second)}})
	h := s.Health()
	if h.Connected || h.BufferedBytes == 0 || h.LagSeconds < 59 || !strings.Contains(h.LastError, "connecting to archive") {
		t.Errorf("health with the archive away: %+v", h)
	}
	if strings.Contains(l.String(), "secret") {
		t.Errorf("the password was logged: %s", l.String())
	}
	// The archive comes back.
	s.dsn = live
	s.Flush()
	if h := s.Health(); !h.Connected || h.BufferedBytes != 0 || h.LastError != "" {
		t.Fatalf("after the replay: %+v\n%s", h, l.String())
	}
	got, err := s.Archive().Points(context.Background(), "a", "b", "rtt_median_seconds", t0.Add(-time.Hour), time.Now())
	if err != nil || len(got) != 30 {
		t.Errorf("%d points in the archive after the replay (%v), want 30", len(got), err)
	}
	if all, _ := s.Archive().Alerts(context.Background(), t0.Add(-time.Hour), false); len(all) != 1 || all[0].Ended.IsZero() {
		t.Errorf("alerts after the replay: %+v, want the one, ended", all)
	}
	// From now on results go straight in.
	s.Put(record{At: time.Now(), Points: points(time.Now(), 1)})
	if h := s.Health(); h.BufferedBytes != 0 {
		t.Errorf("a result was buffered with the archive up: %+v", h)
	}
}

// A full buffer counts and reports what it cannot keep.
func TestStoreFullBuffer(t *testing.T) {
	var l logs
	s, err := OpenStore(deadPostgres(t), t.TempDir(), 4096, l.logf)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		s.Put(record{At: time.Now(), Points: points(time.Now(), 5)})
	}
	h := s.Health()
	if h.BufferedBytes > 4096 || h.Dropped == 0 || !strings.Contains(l.String(), "is full") {
		t.Errorf("health %+v, log %s", h, l.String())
	}
}

// A SQLite archive that cannot be opened is an error at once.
func TestStoreBadSQLite(t *testing.T) {
	var l logs
	if _, err := OpenStore(filepath.Join(t.TempDir(), "no", "such", "dir", "a.db"), t.TempDir(), 1<<20, l.logf); err == nil {
		t.Error("opened a SQLite archive in a folder that does not exist")
	}
}

// TestRecordReadsAnOlderBuffer: a buffer line written before the one audit
// entry (its audit under "t", "action", "outcome") replays with its time,
// action and outcome; a line of today reads as it was written.
func TestRecordReadsAnOlderBuffer(t *testing.T) {
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	var old record
	line := `{"at":"2026-11-20T10:00:00Z","audit":{"t":"2026-11-20T10:00:00Z","identity":"ops","remote":"192.0.2.8","action":"ack","target":"a->b","outcome":"refused: no such alert"}}`
	if err := json.Unmarshal([]byte(line), &old); err != nil {
		t.Fatal(err)
	}
	want := audit.Entry{Time: at, Identity: "ops", Remote: "192.0.2.8", Method: "ack", Target: "a->b", Decision: "refused", Reason: "no such alert"}
	if old.Audit == nil || !reflect.DeepEqual(*old.Audit, want) {
		t.Errorf("an older line read as %+v, want %+v", old.Audit, want)
	}
	b, err := json.Marshal(record{At: at, Audit: &want})
	if err != nil {
		t.Fatal(err)
	}
	var now record
	if err := json.Unmarshal(b, &now); err != nil || now.Audit == nil || !reflect.DeepEqual(*now.Audit, want) || !now.At.Equal(at) {
		t.Errorf("a line of today read as %+v (%v), want %+v", now.Audit, err, want)
	}
}
