package monitor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// record is one write to the archive, as it waits in the local buffer.
// appender is where the service's findings go: the Store, which writes
// them to the archive or buffers them while it is away, or a test's
// recorder. As Prometheus' scrape loops append through an Appendable, the
// runners, observe and the actions write through this alone.
type appender interface {
	Put(r record)
}

// pointAppender is an appender as the runners' (runner.Appender): the points
// that need no judging (interfaces' rates) go through it straight.
type pointAppender struct{ appender }

func (p pointAppender) AppendPoints(at time.Time, pts []core.Point) {
	p.Put(record{At: at, Points: pts})
}

type record struct {
	At     time.Time           `json:"at"`
	Points []core.Point        `json:"points,omitempty"`
	Test   *archive.TestRecord `json:"test,omitempty"`
	Open   *core.Alert         `json:"open,omitempty"`
	Close  *closed             `json:"close,omitempty"`
	Ack    *acked              `json:"ack,omitempty"`
	Audit  *audit.Entry        `json:"audit,omitempty"`
	Change *archive.Change     `json:"change,omitempty"`
}

// UnmarshalJSON reads a record, also one a wanlab before the one audit
// entry buffered: its audit entry's time, action and outcome were under
// "t", "action" and "outcome".
func (r *record) UnmarshalJSON(b []byte) error {
	type plain record
	var v struct {
		plain
		Older *struct {
			T       time.Time `json:"t"`
			Action  string    `json:"action"`
			Outcome string    `json:"outcome"`
		} `json:"audit,omitempty"`
	}
	if err := json.Unmarshal(b, &v.plain); err != nil {
		return err
	}
	*r = record(v.plain)
	if r.Audit == nil || !r.Audit.Time.IsZero() || r.Audit.Decision != "" {
		return nil
	}
	if err := json.Unmarshal(b, &v); err != nil || v.Older == nil {
		return err
	}
	r.Audit.Time, r.Audit.Method = v.Older.T, v.Older.Action
	r.Audit.SetOutcome(v.Older.Outcome)
	return nil
}

type acked struct {
	Ref  string    `json:"ref"`
	By   string    `json:"by"`
	Note string    `json:"note"`
	At   time.Time `json:"at"`
}

type closed struct {
	Ref   string    `json:"ref"`
	Ended time.Time `json:"ended"`
}

// Store writes results to the archive as they come; while the archive is
// unreachable it appends them to a buffer file (JSON lines) of bounded
// size, and replays the buffer, in order, once the archive answers again.
// Records that find the buffer full are counted and reported, never
// dropped silently.
type Store struct {
	dsn  string
	path string // the buffer file
	max  int64
	logf func(format string, args ...any)

	mu       sync.Mutex
	ar       *archive.Archive
	size     int64     // bytes in the buffer file
	oldest   time.Time // of the records in the buffer
	dropped  int64
	lastErr  string
	openedAt time.Time
}

// OpenStore opens the archive at dsn if it can (else it keeps trying on
// Flush) with its buffer in dir, at most max bytes.
func OpenStore(dsn, dir string, max int64, logf func(string, ...any)) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("the monitoring buffer folder: %w", err)
	}
	s := &Store{dsn: dsn, path: filepath.Join(dir, "buffer.jsonl"), max: max, logf: logf}
	if fi, err := os.Stat(s.path); err == nil && fi.Size() > 0 {
		s.size = fi.Size()
		s.oldest = fi.ModTime()
		logf("archive: %d bytes of results wait in %s from an earlier run: they go to the archive first", s.size, s.path)
	}
	s.Flush()
	if s.ar == nil && !archive.IsPostgres(dsn) {
		// A file that cannot be opened will not open later either.
		return nil, errors.New(s.lastErr)
	}
	return s, nil
}

// Archive is the open archive, or nil while it is unreachable.
func (s *Store) Archive() *archive.Archive {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ar
}

// Close closes the archive; what is buffered stays for the next run.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ar != nil {
		return s.ar.Close()
	}
	return nil
}

// Health reports the store's state.
func (s *Store) Health() core.Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := core.Health{Connected: s.ar != nil && s.size == 0, BufferedBytes: s.size, Dropped: s.dropped, LastError: s.lastErr, BufferMax: s.max}
	if s.size > 0 {
		h.LagSeconds = time.Since(s.oldest).Seconds()
	}
	return h
}

// Put writes r to the archive, or to the buffer while the archive is away
// or older records wait there.
func (s *Store) Put(r record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ar != nil && s.size == 0 {
		err := s.apply(r)
		if err == nil {
			return
		}
		s.fail(err)
	}
	s.buffer(r)
}

func (s *Store) fail(err error) {
	if s.lastErr == "" {
		s.logf("archive: %v: buffering results in %s until it answers", err, s.path)
	}
	s.lastErr = err.Error()
}

func (s *Store) buffer(r record) {
	line, err := json.Marshal(r)
	if err != nil {
		s.logf("archive: cannot encode a result: %v", err)
		return
	}
	line = append(line, '\n')
	if s.size+int64(len(line)) > s.max {
		s.dropped++
		if s.dropped == 1 || s.dropped%1000 == 0 {
			s.logf("archive: the buffer %s is full (%d bytes): %d results lost so far", s.path, s.max, s.dropped)
		}
		return
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err == nil {
		_, err = f.Write(line)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		s.dropped++
		s.logf("archive: writing to the buffer %s: %v: a result is lost", s.path, err)
		return
	}
	if s.size == 0 {
		s.oldest = r.At
	}
	s.size += int64(len(line))
}

func (s *Store) apply(r record) error {
	if len(r.Points) > 0 {
		if err := s.ar.AddPoints(rowsOf(r.Points)); err != nil {
			return err
		}
	}
	if r.Test != nil {
		if err := s.ar.AddTest(*r.Test); err != nil {
			return err
		}
	}
	if r.Open != nil {
		if _, err := s.ar.OpenAlert(archive.Alert(*r.Open)); err != nil {
			return err
		}
	}
	if r.Close != nil {
		if err := s.ar.CloseAlert(r.Close.Ref, r.Close.Ended); err != nil {
			return err
		}
	}
	if r.Ack != nil {
		if err := s.ar.AckAlert(r.Ack.Ref, r.Ack.By, r.Ack.Note, r.Ack.At); err != nil {
			return err
		}
	}
	if r.Audit != nil {
		if err := s.ar.AddAudit(*r.Audit); err != nil {
			return err
		}
	}
	if r.Change != nil {
		return s.ar.AddChange(*r.Change)
	}
	return nil
}

// Flush opens the archive if it is not open and replays the buffer into it.
func (s *Store) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ar == nil {
		ar, err := archive.Open(s.dsn)
		if err != nil {
			s.fail(err)
			return
		}
		s.ar, s.openedAt = ar, time.Now()
	}
	if s.size == 0 {
		if s.lastErr != "" {
			s.logf("archive: %s answers again", s.ar.Location())
			s.lastErr = ""
		}
		return
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		s.fail(fmt.Errorf("reading the buffer: %w", err))
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	done, n := 0, 0
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			s.logf("archive: skipping an unreadable line of the buffer: %v", err)
		} else if err := s.apply(r); err != nil {
			s.fail(err)
			break
		}
		done += len(sc.Bytes()) + 1
		n++
	}
	rest := data[min(done, len(data)):]
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, rest, 0o600); err == nil {
		err = os.Rename(tmp, s.path)
	}
	s.size = int64(len(rest))
	if n > 0 {
		s.logf("archive: replayed %d buffered records into %s (%d bytes still buffered)", n, s.ar.Location(), s.size)
	}
	if s.size == 0 {
		s.lastErr = ""
	}
}

// Location is where the archive is, without any password.
func (s *Store) Location() string {
	if archive.IsPostgres(s.dsn) {
		return archive.Redact(s.dsn)
	}
	return s.dsn
}

// The core's points and alerts are the archive's rows, converted here, at
// the store: the core knows no archive.

// rowsOf are points as the archive's rows.
func rowsOf(pts []core.Point) []archive.Point {
	out := make([]archive.Point, len(pts))
	for i, p := range pts {
		out[i] = archive.Point{T: p.T, Src: p.Src, Dst: p.Dst, Test: p.Test, Metric: p.Metric, Value: p.Value, Family: p.Family}
	}
	return out
}

// pointOf is an archive's row as a point.
func pointOf(p archive.Point) core.Point {
	return core.Point{T: p.T, Src: p.Src, Dst: p.Dst, Test: p.Test, Metric: p.Metric, Value: p.Value, Family: p.Family}
}

// alertsOf are the archive's alert rows as the core's alerts.
func alertsOf(rows []archive.Alert) []core.Alert {
	out := make([]core.Alert, len(rows))
	for i, a := range rows {
		out[i] = core.Alert(a)
	}
	return out
}
