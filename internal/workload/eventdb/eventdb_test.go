package eventdb

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/token"
)

func TestStoreValidate(t *testing.T) {
	for _, tc := range []struct {
		store Store
		want  string
	}{
		{Store{Events: 50000, EventSize: 40000, PageSize: 8192}, ""},
		{Store{Events: 0, EventSize: 40000, PageSize: 8192}, "events must be at least 1"},
		{Store{Events: 10, EventSize: 4000, PageSize: 8192}, "pages (8192 B) are larger than events (4000 B)"},
		{Store{Events: 10, EventSize: 4000, PageSize: 8}, "page_size must be between"},
	} {
		err := tc.store.Validate(limits.Default)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.store, err, tc.want)
		}
	}
}

func TestEventPages(t *testing.T) {
	s := Store{Events: 10, EventSize: 40000, PageSize: 8192}
	for _, tc := range []struct {
		event  int
		lo, hi int64
	}{{0, 0, 4}, {1, 4, 9}, {9, 43, 48}} {
		lo, hi := s.eventPages(tc.event)
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("event %d: pages %d-%d, want %d-%d", tc.event, lo, hi, tc.lo, tc.hi)
		}
	}
	if s.Pages() != 49 {
		t.Errorf("Pages() = %d, want 49", s.Pages())
	}
}

// serve starts a server on loopback and returns its address and a stop
// function that returns its totals.
func serve(t *testing.T, spec ServerSpec) (string, func() ServerTotals) {
	t.Helper()
	return serveWithin(t, spec, limits.Default)
}

// serveWithin is serve under the limits l.
func serveWithin(t *testing.T, spec ServerSpec, l limits.Limits) (string, func() ServerTotals) {
	t.Helper()
	srv, err := Listen(spec, l, bind.Local{Addr: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan ServerTotals, 1)
	go func() { done <- srv.Serve(ctx) }()
	return fmt.Sprintf("127.0.0.1:%d", srv.Port()), func() ServerTotals { cancel(); return <-done }
}

func runJobs(t *testing.T, spec ClientSpec) []job.Record {
	var mu sync.Mutex
	var recs []job.Record
	if err := RunClient(context.Background(), spec, limits.Default, "client", func(r job.Record) {
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestJobsReadTheirEvents(t *testing.T) {
	store := Store{Events: 100, EventSize: 40000, PageSize: 8192}
	for _, model := range []string{ModelSingle, ModelConnection} {
		t.Run(model, func(t *testing.T) {
			addr, stop := serve(t, ServerSpec{Store: store, Model: model})
			recs := runJobs(t, ClientSpec{Store: store, Address: addr, Jobs: 4, EventsPerJob: 20, Timeout: 5 * time.Second, Seed: 1})
			totals := stop()
			if len(recs) != 4 {
				t.Fatalf("%d records, want 4", len(recs))
			}
			var sum int64
			for _, r := range recs {
				if r.Status != job.OK {
					t.Fatalf("job %d: %s %s", r.ID, r.Status, r.Reason)
				}
				// 20 events of 40000 B span 98 or 99 pages of 8192 B.
				if r.TCPRTTms <= 0 {
					t.Errorf("job %d: no TCP round trip recorded", r.ID)
				}
				if r.Bytes < 98*8192 || r.Bytes > 99*8192 {
					t.Errorf("job %d read %d B, want 98-99 pages", r.ID, r.Bytes)
				}
				sum += r.Bytes
			}
			if totals.Bytes != sum || totals.Sessions != 4 {
				t.Errorf("server sent %d B in %d sessions; jobs got %d B in 4", totals.Bytes, totals.Sessions, sum)
			}
		})
	}
}

func TestTimeoutFailsTheJob(t *testing.T) {
	store := Store{Events: 100, EventSize: 40000, PageSize: 8192}
	// One request at a time with 20 ms of CPU per page: the second job waits
	// behind the first for longer than its 50 ms timeout.
	addr, stop := serve(t, ServerSpec{Store: store, Model: ModelSingle, CPUPerPage: 20 * time.Millisecond})
	defer stop()
	recs := runJobs(t, ClientSpec{Store: store, Address: addr, Jobs: 6, EventsPerJob: 5, Timeout: 50 * time.Millisecond, Seed: 1})
	timeouts := 0
	for _, r := range recs {
		if r.Status == job.Timeout {
			timeouts++
			if !strings.Contains(r.Reason, "page") {
				t.Errorf("timeout reason %q does not name the page", r.Reason)
			}
		}
	}
	if timeouts == 0 {
		t.Fatalf("no job timed out: %+v", recs)
	}
}

func TestRefusedConnectionFails(t *testing.T) {
	store := Store{Events: 10, EventSize: 40000, PageSize: 8192}
	recs := runJobs(t, ClientSpec{Store: store, Address: "127.0.0.1:1", Jobs: 1, EventsPerJob: 1, Timeout: time.Second})
	if recs[0].Status != job.Failed || !strings.Contains(recs[0].Reason, "opening a session") {
		t.Fatalf("got %+v", recs[0])
	}
}

// TestStrangersAreBounded: plain connections from one address to a
// server's port wait for their token at most max(the sessions it expects,
// token.Margin) at once, new ones closed past that (19,985 of them, each
// held 30 s, once took an agent to its limit of file descriptors), and
// the test's own sessions still get in.
func TestStrangersAreBounded(t *testing.T) {
	store := Store{Events: 100, EventSize: 40000, PageSize: 8192}
	tok := token.New()
	addr, stop := serve(t, ServerSpec{Store: store, Model: ModelConnection, Sessions: 4, Token: tok})
	const n = 3 * token.Margin
	testsupport.DialStrangersFrom(t, addr, "127.0.0.2", n).WaitClosed(t, n-token.Margin)
	recs := runJobs(t, ClientSpec{Store: store, Address: addr, Token: tok, Jobs: 4, EventsPerJob: 5, Timeout: 5 * time.Second, Seed: 1})
	totals := stop()
	for _, r := range recs {
		if r.Status != job.OK {
			t.Errorf("job %d with %d strangers connected: %s %s", r.ID, n, r.Status, r.Reason)
		}
	}
	if len(recs) != 4 || totals.Sessions != 4 || totals.Errors != 0 {
		t.Errorf("%d jobs ran, the server counted %d sessions and %d errors; want 4, 4 and 0", len(recs), totals.Sessions, totals.Errors)
	}
}

// TestBurstOfClientsAllGetIn: a client's jobs open their sessions all at
// once; past 64 awaiting their token they once dropped each other's
// connections. The server holds as many as it may serve.
func TestBurstOfClientsAllGetIn(t *testing.T) {
	store := Store{Events: 10, EventSize: 8192, PageSize: 8192}
	tok := token.New()
	const jobs = 300
	addr, stop := serve(t, ServerSpec{Store: store, Model: ModelConnection, Sessions: jobs, Token: tok})
	recs := runJobs(t, ClientSpec{Store: store, Address: addr, Token: tok, Jobs: jobs, EventsPerJob: 1, Timeout: 10 * time.Second, Seed: 1})
	totals := stop()
	failed := 0
	for _, r := range recs {
		if r.Status != job.OK {
			if failed++; failed <= 3 {
				t.Errorf("job %d: %s %s", r.ID, r.Status, r.Reason)
			}
		}
	}
	if failed > 0 || len(recs) != jobs || totals.Sessions != jobs {
		t.Errorf("%d of %d jobs failed, the server counted %d sessions", failed, jobs, totals.Sessions)
	}
}

// TestExpect: the server's listener expects the sessions of the step's
// clients, not the agent's connection limit (1,024 by default, which let
// one stranger hold as many connections awaiting their token).
func TestExpect(t *testing.T) {
	for _, tc := range []struct {
		sessions, conns, want int
	}{
		{0, 1024, 1024},
		{300, 1024, 300},
		{5000, 1024, 1024},
	} {
		if got := (ServerSpec{Sessions: tc.sessions}).expect(tc.conns); got != tc.want {
			t.Errorf("%d sessions, %d connections at most: expects %d, want %d", tc.sessions, tc.conns, got, tc.want)
		}
	}
}
