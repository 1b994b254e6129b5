package core

import "time"

// Ack marks the open incident of a ref acknowledged, as Detector.Ack does
// a path's alert; false if none is. The acknowledgement stays with the
// incident until it closes.
func (t *Incidents) Ack(ref, who, note string, at time.Time) bool {
	for _, h := range t.held {
		if h.open != nil && h.open.Ref == ref {
			h.open.AckedBy, h.open.AckedAt, h.open.AckNote = who, at, note
			return true
		}
	}
	return false
}
