package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// maxNote bounds an acknowledgement's note.
const maxNote = 500

// Audit records a state change asked of the service, done (err nil) or
// refused, in the archive (buffered like results) and the log.
func (a *API) Audit(r *http.Request, who, action, target string, err error) {
	e := audit.Entry{Time: time.Now(), Identity: who, Remote: remote(r), Method: action, Target: target, Decision: "ok"}
	if err != nil {
		e.Decision, e.Reason = "refused", err.Error()
	}
	a.svc.Audit(fmt.Sprintf("audit: %s %q by %q from %s: %q", action, target, who, e.Remote, e.Outcome()), &e)
}

// summariseLogins writes, as one audit entry, the refused sign-ins that
// were counted rather than written one by one since the last summary.
func (a *API) summariseLogins(now time.Time) {
	e, ok := a.access().quietSummary(now)
	if !ok {
		return
	}
	a.svc.Audit(fmt.Sprintf("audit: login summary from %s: %s", e.Remote, e.Outcome()), &e)
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
	who := Identity(r)
	code, err := http.StatusTooManyRequests, fmt.Errorf("more than %d state changes a minute by %s", actionsAllowed, who)
	if a.access().allowAction(who) {
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
		if !a.svc.Ack(ref, Identity(r), body.Note) {
			return http.StatusNotFound, fmt.Errorf("no active alert %q", ref)
		}
		return http.StatusOK, nil
	})
}

// POST /api/v1/paths/{src}/{dst}/run {"test": "bulk", "family": "ipv6"}:
// one run of a throughput-class test now, through the scheduler (never
// beside another on the same host); of one family's run where the test
// runs once per family (without family: each family's).
func (a *API) runNow(w http.ResponseWriter, r *http.Request) {
	src, dst := r.PathValue("src"), r.PathValue("dst")
	var body struct {
		Test   string `json:"test"`
		Family string `json:"family"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		a.Audit(r, Identity(r), "run", src+"->"+dst, err)
		problem(w, http.StatusBadRequest, "body: give {\"test\": \"NAME\"} (and \"family\": \"ipv4\" or \"ipv6\", if it runs once per family): "+err.Error())
		return
	}
	target := body.Test + " " + src + "->" + dst
	if body.Family != "" {
		target += " " + body.Family
	}
	a.act(w, r, "run", target, func() (int, error) {
		err := a.svc.RunNow(body.Test, body.Family, src, dst, Identity(r))
		switch {
		case err == nil:
			return http.StatusOK, nil
		case errors.Is(err, core.ErrNotConfigured):
			return http.StatusNotFound, err
		case errors.Is(err, core.ErrElsewhere):
			return http.StatusConflict, err
		}
		return http.StatusTooManyRequests, err
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
	listFromArchive(a.svc, w, "audit", func(ar *archive.Archive) ([]auditRow, error) {
		entries, err := ar.Audit(r.Context(), since, limit)
		rows := make([]auditRow, len(entries))
		for i, e := range entries {
			rows[i] = auditRow{T: e.Time, Identity: e.Identity, Remote: e.Remote, Action: e.Method, Target: e.Target, Outcome: e.Outcome()}
		}
		return rows, err
	})
}

// auditRow is an audit entry as GET /api/v1/audit shows it (openapi.yaml):
// its method is the action, its decision and reason one outcome.
type auditRow struct {
	T        time.Time `json:"t"`
	Identity string    `json:"identity"`
	Remote   string    `json:"remote"`
	Action   string    `json:"action"`
	Target   string    `json:"target"`
	Outcome  string    `json:"outcome"`
}
