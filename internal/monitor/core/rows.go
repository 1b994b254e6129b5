package core

import (
	"encoding/json"
	"time"
)

// Point is one figure of one test of a path at one time: what a runner
// finds and the store keeps (package monitor converts it to and from the
// archive's rows; the JSON names are the archive's).
type Point struct {
	T      time.Time `json:"t"`
	Src    string    `json:"src"`
	Dst    string    `json:"dst"`
	Test   string    `json:"test"`
	Metric string    `json:"metric"`
	Value  float64   `json:"value"`
	// Family is the address family of a test run once per family, as the
	// path's key says ("" for a test's one run).
	Family string `json:"family,omitempty"`
}

// Alert is a path that left its baseline (or gave no data), from when it
// fired until it ended ("ended" zero while active). Its fields are the
// archive's alert row's, one for one, so that the store converts it
// without copying field by field.
type Alert struct {
	ID        int64           `json:"id"`
	Ref       string          `json:"ref"`
	Rule      string          `json:"rule"`
	Src       string          `json:"src"`
	Dst       string          `json:"dst"`
	Test      string          `json:"test"`
	Started   time.Time       `json:"started"`
	Ended     time.Time       `json:"ended,omitzero"`
	Value     float64         `json:"value"`
	Baseline  float64         `json:"baseline"`
	Threshold float64         `json:"threshold"`
	Message   string          `json:"message"`
	Evidence  json.RawMessage `json:"evidence,omitempty"`
	// AckedBy is who acknowledged it ("" nobody), when, and what they said.
	AckedBy string    `json:"acked_by,omitempty"`
	AckedAt time.Time `json:"acked_at,omitzero"`
	AckNote string    `json:"ack_note,omitempty"`
	// Family is the path's key's (a test run once per family); Scope, of
	// such a run's alert, whether the other family's run alerts too
	// (ScopeIPv4Only, ScopeIPv6Only, ScopePath; "" not known), as judged
	// when it fired (the service's view says ScopePath once the other
	// family's run alerts too).
	Family string `json:"family,omitempty"`
	Scope  string `json:"scope,omitempty"`
}
