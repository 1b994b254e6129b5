package monitor

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// Bounds of the state changes.
const (
	maxNote     = 500
	maxOnDemand = 10 // on-demand runs queued at once
)

// Audit records a state change asked of the service, done (err nil) or
// refused, in the archive (buffered like results) and the log.
func (a *API) Audit(r *http.Request, who, action, target string, err error) {
	s := a.s
	e := archive.AuditEntry{T: time.Now(), Identity: who, Remote: remote(r), Action: action, Target: target, Outcome: "ok"}
	if err != nil {
		e.Outcome = "refused: " + err.Error()
	}
	s.mu.Lock()
	s.auditf("audit: %s %q by %q from %s: %q", action, target, who, e.Remote, e.Outcome)
	s.mu.Unlock()
	s.out.Put(record{At: e.T, Audit: &e})
}

// summariseLogins writes, as one audit entry, the refused sign-ins that
// were counted rather than written one by one since the last summary.
func (s *Service) summariseLogins(now time.Time) {
	s.mu.Lock()
	g := s.gate
	s.mu.Unlock()
	e, ok := g.quietSummary(now)
	if !ok {
		return
	}
	s.mu.Lock()
	s.auditf("audit: login summary from %s: %s", e.Remote, e.Outcome)
	s.mu.Unlock()
	s.out.Put(record{At: e.T, Audit: &e})
}

// actionRoutes are the API's state changes, each behind Guard.
func (a *API) actionRoutes() []Route {
	return []Route{
		{"POST", "/api/v1/alerts/{ref}/ack", a.ack},
		{"POST", "/api/v1/paths/{src}/{dst}/run", a.runNow},
		{"GET", "/api/v1/audit", a.audit},
		{"GET", "/api/v1/whoami", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, map[string]string{"identity": Identity(r)})
		}},
	}
}

// act answers a state change: refused past the identity's rate, audited
// either way.
func (a *API) act(w http.ResponseWriter, r *http.Request, action, target string, do func() (int, error)) {
	s := a.s
	who := Identity(r)
	code, err := http.StatusTooManyRequests, fmt.Errorf("more than %d state changes a minute by %s", actionsAllowed, who)
	s.mu.Lock()
	g := s.gate
	s.mu.Unlock()
	if g.allowAction(who) {
		code, err = do()
	}
	a.Audit(r, who, action, target, err)
	if err != nil {
		problem(w, code, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"done": action + " " + target, "by": who})
}

// POST /api/v1/alerts/{ref}/ack {"note": "..."}
func (a *API) ack(w http.ResponseWriter, r *http.Request) {
	s := a.s
	ref := r.PathValue("ref")
	a.act(w, r, "ack", ref, func() (int, error) {
		var body struct {
			Note string `json:"note"`
		}
		if r.ContentLength != 0 {
			dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&body); err != nil {
				return http.StatusBadRequest, fmt.Errorf("body: give {\"note\": \"...\"} or nothing: %v", err)
			}
		}
		if len(body.Note) > maxNote {
			return http.StatusBadRequest, fmt.Errorf("note: at most %d bytes", maxNote)
		}
		now := time.Now()
		s.mu.Lock()
		found := s.det.Ack(ref, Identity(r), body.Note, now)
		s.mu.Unlock()
		if !found {
			return http.StatusNotFound, fmt.Errorf("no active alert %q", ref)
		}
		s.out.Put(record{At: now, Ack: &acked{Ref: ref, By: Identity(r), Note: body.Note, At: now}})
		return http.StatusOK, nil
	})
}

// POST /api/v1/paths/{src}/{dst}/run {"test": "bulk"}: one run of a
// throughput-class test now, through the scheduler (never beside another
// on the same host).
func (a *API) runNow(w http.ResponseWriter, r *http.Request) {
	s := a.s
	src, dst := r.PathValue("src"), r.PathValue("dst")
	var body struct {
		Test string `json:"test"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		a.Audit(r, Identity(r), "run", src+"->"+dst, err)
		problem(w, http.StatusBadRequest, "body: give {\"test\": \"NAME\"}: "+err.Error())
		return
	}
	a.act(w, r, "run", body.Test+" "+src+"->"+dst, func() (int, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		i := slices.IndexFunc(s.cfg.Tests, func(t core.Test) bool { return t.Name == body.Test })
		if i < 0 || !s.cfg.Tests[i].Exclusive() || !slices.Contains(s.cfg.Pairs(s.cfg.Tests[i]), [2]string{src, dst}) {
			return http.StatusNotFound, fmt.Errorf("no throughput, transfer or disk test %q of %s->%s in the configuration", body.Test, src, dst)
		}
		if !s.owns(src, dst) {
			return http.StatusConflict, fmt.Errorf("%s->%s is measured by another wanlab serve process sharing the archive: ask it", src, dst)
		}
		if err := s.sched.Add(&s.cfg.Tests[i], src, dst, Identity(r), time.Now(), maxOnDemand); err != nil {
			return http.StatusTooManyRequests, err
		}
		s.logf("on demand: %s %s->%s, asked by %s", body.Test, src, dst, Identity(r))
		select {
		case s.wake <- struct{}{}:
		default:
		}
		return http.StatusOK, nil
	})
}

// GET /api/v1/audit[?since=T&limit=N]: for identities only.
func (a *API) audit(w http.ResponseWriter, r *http.Request) {
	if Identity(r) == "" {
		problem(w, http.StatusUnauthorized, "the audit is for identities: Authorization: Bearer TOKEN")
		return
	}
	since, ok := timeParam(r, "since", time.Now().Add(-7*24*time.Hour))
	limit, ok2 := intParam(r, "limit", 100, 1, 10000)
	if !ok || !ok2 {
		problem(w, http.StatusBadRequest, "since: an RFC 3339 time or Unix seconds; limit: 1 to 10000")
		return
	}
	listFromArchive(a, w, "audit", func(ar *archive.Archive) ([]archive.AuditEntry, error) {
		return ar.Audit(r.Context(), since, limit)
	})
}
