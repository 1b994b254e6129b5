package archive

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
)

// RunStore keeps runs and what they measured: their steps, samples, jobs
// and events (the tables runs, steps, samples, jobs and events).
type RunStore struct{ *db }

// Run is one stored run.
type Run struct {
	ID            int64           `json:"id"`
	Kind          string          `json:"kind"`
	Name          string          `json:"name"`
	Testbed       string          `json:"testbed,omitempty"`
	StartedAt     string          `json:"started_at"`
	EndedAt       string          `json:"ended_at,omitempty"`
	Status        string          `json:"status"`
	Reason        string          `json:"reason,omitempty"`
	Params        json.RawMessage `json:"params"`
	Result        json.RawMessage `json:"result"`
	WanlabVersion string          `json:"wanlab_version"`
	Samples       int64           `json:"samples"`
	// Scenario is the scenario text of a run of one; Runs leaves it out.
	Scenario string `json:"-"`
}

// Run statuses (steps use the same words).
const (
	StatusRunning     = "running"
	StatusDone        = "done"
	StatusPartial     = "partial"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
)

// NewRun describes a run about to start.
type NewRun struct {
	Kind, Name, Testbed, Version string
	Params                       any
	Scenario                     string
	Machine                      any
}

// StartRun records a run as started and returns its id. It is stored at
// once, so a run cut short is still in the archive, marked running until
// EndRun says otherwise (or MarkAbandoned finds its process gone).
func (s *RunStore) StartRun(r NewRun) (int64, error) {
	p, err := json.Marshal(r.Params)
	if err != nil {
		return 0, err
	}
	m, err := json.Marshal(r.Machine)
	if err != nil {
		return 0, err
	}
	var id int64
	err = s.pool.QueryRow(s.q(`INSERT INTO runs (kind, name, testbed, started_at, status, params, wanlab_version, scenario, machine, controller)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		r.Kind, r.Name, r.Testbed, now(), StatusRunning, string(p), r.Version, r.Scenario, string(m), controllerID()).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("recording the run in %s: %w", s.path, err)
	}
	return id, nil
}

// ResumeRun marks an earlier run as running again, by this process.
func (s *RunStore) ResumeRun(id int64) error {
	_, err := s.pool.Exec(s.q(`UPDATE runs SET status = ?, reason = '', ended_at = NULL, controller = ? WHERE id = ?`), StatusRunning, controllerID(), id)
	if err != nil {
		return fmt.Errorf("resuming run %d: %w", id, err)
	}
	return nil
}

// controllerID names this process across reboots: the kernel's boot id and
// the pid.
func controllerID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b)) + " " + strconv.Itoa(os.Getpid())
}

// MarkAbandoned marks as interrupted every run still recorded as running
// whose process is gone (killed, or the machine rebooted), with its
// unfinished steps, and returns their ids.
func (s *RunStore) MarkAbandoned(ctx context.Context) ([]int64, error) {
	type orphan struct {
		id  int64
		why string
	}
	var orphans []orphan
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	err := s.queryEach(ctx, `SELECT id, controller FROM runs WHERE status = ?`, func(sc scanner) error {
		var id int64
		var ctl string
		if err := sc.Scan(&id, &ctl); err != nil {
			return err
		}
		bootID, pidText, _ := strings.Cut(ctl, " ")
		pid, _ := strconv.Atoi(pidText)
		switch {
		case ctl == "":
			// Recorded by a wanlab that did not say who it was: leave it.
		case bootID != strings.TrimSpace(string(boot)):
			orphans = append(orphans, orphan{id, "the machine restarted while the run was going on"})
		case pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH:
			orphans = append(orphans, orphan{id, fmt.Sprintf("the wanlab process recording it (pid %d) ended without finishing it (killed?)", pid)})
		}
		return nil
	}, StatusRunning)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, o := range orphans {
		if err := s.EndRun(o.id, StatusInterrupted, o.why, nil); err != nil {
			return ids, err
		}
		if _, err := s.pool.ExecContext(ctx, s.q(`UPDATE steps SET status = ?, reason = ?, ended_at = ? WHERE run_id = ? AND status = ?`),
			StatusInterrupted, o.why, now(), o.id, StatusRunning); err != nil {
			return ids, err
		}
		ids = append(ids, o.id)
	}
	return ids, nil
}

// EndRun records how a run ended, with its summary (nil keeps the one stored).
func (s *RunStore) EndRun(id int64, status, reason string, result any) error {
	var err error
	if result == nil {
		_, err = s.pool.Exec(s.q(`UPDATE runs SET ended_at = ?, status = ?, reason = ? WHERE id = ?`), now(), status, reason, id)
	} else {
		var res []byte
		if res, err = json.Marshal(result); err != nil {
			return err
		}
		_, err = s.pool.Exec(s.q(`UPDATE runs SET ended_at = ?, status = ?, reason = ?, result = ? WHERE id = ?`), now(), status, reason, string(res), id)
	}
	if err != nil {
		return fmt.Errorf("recording the end of run %d: %w", id, err)
	}
	return nil
}

// Step is one stored step of a run.
type Step struct {
	ID        int64           `json:"id"`
	Index     int             `json:"index"`
	Workload  string          `json:"workload"`
	Label     string          `json:"label"`
	Params    json.RawMessage `json:"params"`
	StartedAt string          `json:"started_at"`
	EndedAt   string          `json:"ended_at,omitempty"`
	Status    string          `json:"status"`
	Reason    string          `json:"reason,omitempty"`
	Result    json.RawMessage `json:"result"`
}

// StartStep records a step of a run as started.
func (s *RunStore) StartStep(run int64, index int, workload, label string, params any) (int64, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return 0, err
	}
	var id int64
	err = s.pool.QueryRow(s.q(`INSERT INTO steps (run_id, idx, workload, label, params, started_at, status) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		run, index, workload, label, string(p), now(), StatusRunning).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("recording step %d of run %d: %w", index, run, err)
	}
	return id, nil
}

// EndStep records how a step ended, with its summary.
func (s *RunStore) EndStep(step int64, status, reason string, result any) error {
	res, err := json.Marshal(result)
	if err != nil {
		return err
	}
	if _, err := s.pool.Exec(s.q(`UPDATE steps SET ended_at = ?, status = ?, reason = ?, result = ? WHERE id = ?`), now(), status, reason, string(res), step); err != nil {
		return fmt.Errorf("recording the end of step %d: %w", step, err)
	}
	return nil
}

// Steps lists a run's steps in order; an interrupted and resumed run can
// have several tries of one index, the last is the one that counts.
func (s *RunStore) Steps(ctx context.Context, run int64) ([]Step, error) {
	return queryAll(ctx, s.db, `SELECT id, idx, workload, label, params, started_at, COALESCE(ended_at, ''), status, reason, result
		FROM steps WHERE run_id = ? ORDER BY idx, id`, func(sc scanner) (Step, error) {
		var st Step
		var params, result string
		err := sc.Scan(&st.ID, &st.Index, &st.Workload, &st.Label, &params, &st.StartedAt, &st.EndedAt, &st.Status, &st.Reason, &result)
		st.Params, st.Result = json.RawMessage(params), json.RawMessage(result)
		return st, err
	}, run)
}

// Sample is one value of one metric about one subject at one time.
type Sample = results.Sample

// AddSamples stores samples of a run (and of one of its steps, unless step
// is 0) in one transaction.
func (s *RunStore) AddSamples(run, step int64, samples []Sample) error {
	rows := make([][]any, len(samples))
	for i, sm := range samples {
		rows[i] = []any{run, nullID(step), unixSeconds(sm.T), sm.Metric, sm.Subject, sm.Value, sm.Unit}
	}
	if err := s.insertRows("samples", []string{"run_id", "step_id", "t", "metric", "subject", "value", "unit"}, rows); err != nil {
		return fmt.Errorf("storing samples of run %d: %w", run, err)
	}
	return nil
}

// AddJobs stores the jobs of a step.
func (s *RunStore) AddJobs(run, step int64, jobs []job.Record) error {
	rows := make([][]any, len(jobs))
	for i, j := range jobs {
		rows[i] = []any{run, step, j.ID, j.Host, j.Subject, unixSeconds(j.Start), unixSeconds(j.End), j.Bytes, j.Status, j.Reason, j.TCPRTTms, int64(j.TCPRetransmits)}
	}
	if err := s.insertRows("jobs", []string{"run_id", "step_id", "job", "host", "subject", "started", "ended", "bytes", "status", "reason", "tcp_rtt_ms", "tcp_retransmits"}, rows); err != nil {
		return fmt.Errorf("storing jobs of run %d: %w", run, err)
	}
	return nil
}

// Jobs calls fn for every job of a step, in the order they started.
func (s *RunStore) Jobs(ctx context.Context, step int64, fn func(job.Record) error) error {
	return s.queryEach(ctx, `SELECT job, host, subject, started, ended, bytes, status, reason, tcp_rtt_ms, tcp_retransmits FROM jobs WHERE step_id = ? ORDER BY started, job`, func(sc scanner) error {
		var j job.Record
		var start, end float64
		if err := sc.Scan(&j.ID, &j.Host, &j.Subject, &start, &end, &j.Bytes, &j.Status, &j.Reason, &j.TCPRTTms, &j.TCPRetransmits); err != nil {
			return err
		}
		j.Start, j.End = fromUnix(start), fromUnix(end)
		return fn(j)
	}, step)
}

// Event levels. Link is a change made to the test-bed's links (an event
// of the scenario's timeline, or wanlab testbed set) while the run ran.
const (
	Info    = "info"
	Warning = "warning"
	Failure = "error"
	Link    = "link"
)

// AddEvent records something that happens now during a run (and one of
// its steps, unless step is 0).
func (s *RunStore) AddEvent(run, step int64, level, message string) error {
	return s.AddEventAt(run, step, time.Now(), level, message)
}

// AddEventAt records something that happened at t during a run.
func (s *RunStore) AddEventAt(run, step int64, t time.Time, level, message string) error {
	_, err := s.pool.Exec(s.q(`INSERT INTO events (run_id, step_id, t, level, message) VALUES (?, ?, ?, ?, ?)`), run, nullID(step), unixSeconds(t), level, message)
	if err != nil {
		return fmt.Errorf("recording an event of run %d: %w", run, err)
	}
	return nil
}

// Event is one stored event.
type Event struct {
	Step    int64     `json:"step_id,omitempty"`
	T       time.Time `json:"t"`
	Level   string    `json:"level"`
	Message string    `json:"message"`
}

// Events lists a run's events in time order.
func (s *RunStore) Events(ctx context.Context, run int64) ([]Event, error) {
	return queryAll(ctx, s.db, `SELECT COALESCE(step_id, 0), t, level, message FROM events WHERE run_id = ? ORDER BY t`, func(sc scanner) (Event, error) {
		var e Event
		var t float64
		err := sc.Scan(&e.Step, &t, &e.Level, &e.Message)
		e.T = fromUnix(t)
		return e, err
	}, run)
}

// ErrNoRun means no run has that id.
var ErrNoRun = errors.New("no such run")

const runColumns = `r.id, r.kind, r.name, r.testbed, r.started_at, COALESCE(r.ended_at, ''), r.status, r.reason,
	r.params, r.result, r.wanlab_version, (SELECT COUNT(*) FROM samples s WHERE s.run_id = r.id)`

func scanRun(sc scanner, extra ...any) (Run, error) {
	var r Run
	var params, result string
	err := sc.Scan(append([]any{&r.ID, &r.Kind, &r.Name, &r.Testbed, &r.StartedAt, &r.EndedAt, &r.Status, &r.Reason, &params, &result, &r.WanlabVersion, &r.Samples}, extra...)...)
	r.Params, r.Result = json.RawMessage(params), json.RawMessage(result)
	return r, err
}

// Runs lists the runs, newest first.
func (s *RunStore) Runs(ctx context.Context) ([]Run, error) {
	return queryAll(ctx, s.db, `SELECT `+runColumns+` FROM runs r ORDER BY r.id DESC`, func(sc scanner) (Run, error) { return scanRun(sc) })
}

// GetRun returns one run with its scenario text.
func (s *RunStore) GetRun(ctx context.Context, id int64) (Run, error) {
	var scenario string
	r, err := scanRun(s.pool.QueryRowContext(ctx, s.q(`SELECT `+runColumns+`, r.scenario FROM runs r WHERE r.id = ?`), id), &scenario)
	r.Scenario = scenario
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("run %d: %w", id, ErrNoRun)
	}
	return r, err
}

// StoredBytes estimates the space a run's samples, jobs and events take.
func (s *RunStore) StoredBytes(ctx context.Context, run int64) (int64, error) {
	var n int64
	err := s.pool.QueryRowContext(ctx, s.q(`SELECT
		COALESCE((SELECT SUM(LENGTH(metric) + LENGTH(subject) + LENGTH(unit) + 40) FROM samples WHERE run_id = ?), 0) +
		COALESCE((SELECT SUM(LENGTH(host) + LENGTH(subject) + LENGTH(status) + LENGTH(reason) + 56) FROM jobs WHERE run_id = ?), 0) +
		COALESCE((SELECT SUM(LENGTH(message) + 32) FROM events WHERE run_id = ?), 0)`), run, run, run).Scan(&n)
	return n, err
}

// Samples calls fn for every sample of a run, in time order.
func (s *RunStore) Samples(ctx context.Context, run int64, fn func(Sample) error) error {
	var n int
	if err := s.pool.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM runs WHERE id = ?`), run).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("run %d: %w", run, ErrNoRun)
	}
	return s.queryEach(ctx, `SELECT t, metric, subject, value, unit FROM samples WHERE run_id = ? ORDER BY t, metric, subject`, func(sc scanner) error {
		var sm Sample
		var t float64
		if err := sc.Scan(&t, &sm.Metric, &sm.Subject, &sm.Value, &sm.Unit); err != nil {
			return err
		}
		sm.T = fromUnix(t)
		return fn(sm)
	}, run)
}

// Recording is one measurement being kept in an archive: recorded as
// started at once, so that it is there even if it is cut short.
type Recording struct {
	a  *Archive
	id int64
}

// Record opens the archive at path and records a measurement as started.
// An empty path keeps nothing: Finish on the Recording does nothing.
func Record(path string, r NewRun) (*Recording, error) {
	if path == "" {
		return &Recording{}, nil
	}
	a, err := Open(path)
	if err != nil {
		return nil, err
	}
	id, err := a.StartRun(r)
	if err != nil {
		a.Close()
		return nil, err
	}
	return &Recording{a: a, id: id}, nil
}

// Finish stores the measurement's samples and how it ended: failed when it
// measured nothing, partial when it failed after measuring something,
// done otherwise.
func (r *Recording) Finish(samples []Sample, result any, measureErr error) error {
	if r.a == nil {
		return nil
	}
	defer r.a.Close()
	status, reason := StatusDone, ""
	switch {
	case measureErr != nil && result == nil:
		status, reason = StatusFailed, measureErr.Error()
	case measureErr != nil:
		status, reason = StatusPartial, measureErr.Error()
	}
	if err := r.a.AddSamples(r.id, 0, samples); err != nil {
		return err
	}
	return r.a.EndRun(r.id, status, reason, result)
}
