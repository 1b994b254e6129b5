package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/audit"
)

// auditor writes the agent's audit lines through Server.Audit: every
// decision of the guard and every call's end, and, paced, the refusals a
// caller can repeat at will.
type auditor struct{ *Server }

// audit writes the line of one of the guard's decisions on a call: allow,
// refuse, or end (with the bytes it moved and how long it ran).
func (s auditor) audit(d *decision, method, decision, reason string, moved int64) {
	if s.Audit == nil {
		return
	}
	e := audit.Entry{Time: time.Now().UTC(), Identity: d.who.String(), Remote: d.who.remote, Method: method, Test: d.test,
		Kind: d.req.kind, Peers: d.req.peers, Decision: decision, Reason: reason, Bytes: moved}
	if d.rule != nil {
		e.Rule = d.rule.Name
	}
	if t := d.req.target; t != nil {
		e.Kind = t.kind // the far end's: ping, stamp or iperf3
	}
	if decision == "end" {
		e.Seconds = time.Since(d.start).Seconds()
	}
	s.Audit(e)
}

// refuseEarly audits a call refused before it was authorised, paced per
// identity (auditRefusal), and returns err as the call's status.
func (s auditor) refuseEarly(ctx context.Context, who caller, method string, err error) error {
	d := &decision{who: who, start: time.Now()}
	d.test, _ = metaOf(ctx)
	s.auditRefusal(d, method, err.Error())
	return status.Convert(err).Err()
}

// auditRefusal audits a refusal that its caller can repeat at will (one
// before the call is authorised, or of a call too fast), paced per
// identity: past a burst, the lines are counted and the count written in
// the identity's next line or in a summary line (auditPacer).
func (s auditor) auditRefusal(d *decision, method, reason string) {
	if s.Audit == nil {
		return
	}
	s.early.once.Do(func() {
		s.early.flush = s.auditFlush
		s.early.summary = func(key string, n int64) {
			id, of := key, ""
			if key == overflowKey {
				id, of = "", fmt.Sprintf(" of identities past the %d the agent counts apart", maxAuditKeys)
			}
			s.Audit(audit.Entry{Time: time.Now().UTC(), Identity: id, Decision: "refuse",
				Reason: fmt.Sprintf("%d calls%s refused before they were authorised, not logged one by one", n, of)})
		}
	})
	ok, held, counted := s.early.allow(d.who.key())
	if !ok {
		return
	}
	switch {
	case held > 0 && counted == overflowKey:
		reason = fmt.Sprintf("%s (and %d calls of identities past the %d the agent counts apart refused before this one, not logged one by one)", reason, held, maxAuditKeys)
	case held > 0:
		reason = fmt.Sprintf("%s (and %d calls of this identity refused before this one, not logged one by one)", reason, held)
	}
	s.audit(d, method, "refuse", reason, 0)
}

// AuditLog writes an agent's audit entries as JSON lines, to a file
// (appended, 0600, reopened on Reopen for log rotation) or a stream.
type AuditLog struct {
	path string
	mu   sync.Mutex
	w    io.Writer
	f    *os.File
	// Failed counts entries that could not be written.
	Failed int
}

// OpenAudit opens the audit log at path; "-" is standard error (the
// journal, under systemd).
func OpenAudit(path string) (*AuditLog, error) {
	a := &AuditLog{path: path}
	if path == "-" {
		a.w = os.Stderr
		return a, nil
	}
	return a, a.Reopen()
}

// Reopen opens the file again, as log rotation needs.
func (a *AuditLog) Reopen() error {
	if a.path == "-" {
		return nil
	}
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening the audit log: %w", err)
	}
	a.mu.Lock()
	old := a.f
	a.f, a.w = f, f
	a.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// Write appends one entry.
func (a *AuditLog) Write(e audit.Entry) {
	b, err := json.Marshal(e)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil {
		_, err = a.w.Write(append(b, '\n'))
	}
	if err != nil {
		a.Failed++
	}
}

// Close closes the file.
func (a *AuditLog) Close() error {
	if a.f == nil {
		return nil
	}
	return a.f.Close()
}
