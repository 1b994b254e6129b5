// Package audit is wanlab's audit entry: one decision on what a caller
// asked, made by an agent (a line of its audit log, JSON) or by wanlab
// serve (a row of the archive's mon_audit). It is a leaf of the module:
// the agent, the archive and the monitoring service each import it, and
// none needs another for it (the agent imports no archive, the archive no
// agent).
package audit

import (
	"strings"
	"time"
)

// Entry is one audited decision: who asked (Identity, from Remote), what
// (Method, of a Test of a Kind toward Peers under a policy's Rule; or an
// action on a Target), what was decided and why, and, at the end of an
// agent's call, what it moved in how long. Its JSON is an agent's audit
// log line.
type Entry struct {
	Time time.Time `json:"time"`
	// Identity is the caller's: its certificate's identities, or the name
	// of its token; "" for none.
	Identity string `json:"identity"`
	Remote   string `json:"remote,omitempty"`
	Rule     string `json:"rule,omitempty"`
	// Method is what was asked: an agent's method, or wanlab serve's
	// action (login, ack, run).
	Method string `json:"method,omitempty"`
	// Target is what wanlab serve was asked to act on (an alert, a path).
	Target string   `json:"target,omitempty"`
	Test   string   `json:"test,omitempty"`
	Kind   string   `json:"kind,omitempty"`
	Peers  []string `json:"peers,omitempty"`
	// Decision is an agent's allow, refuse, end (of an allowed call) or
	// tls (a connection refused in its handshake), or wanlab serve's ok or
	// refused.
	Decision string  `json:"decision"`
	Reason   string  `json:"reason,omitempty"`
	Bytes    int64   `json:"bytes,omitempty"`
	Seconds  float64 `json:"seconds,omitempty"`
}

// Outcome is the decision with its reason, if any, as one text: "ok",
// "refused: why" (wanlab serve shows and stores it so).
func (e Entry) Outcome() string {
	if e.Reason == "" {
		return e.Decision
	}
	return e.Decision + ": " + e.Reason
}

// SetOutcome sets the decision and its reason from an Outcome.
func (e *Entry) SetOutcome(outcome string) {
	e.Decision, e.Reason, _ = strings.Cut(outcome, ": ")
}
