package twin

// LossRuns counts one direction's losses in the campaign's unloaded
// probe rounds (its probes, and the loads' probes before them), as the
// loss fit reads them: on that way where the reflector numbers the
// probes, round trip otherwise (oneWay false). Lost of Sent were lost, in
// Runs runs of consecutive losses; Lost/Runs is the mean burst length.
// wanlab twin --check compares these of a path and of its twin.
func (c Campaign) LossRuns(from, to string) (r LossCount) {
	w := way{from, to}
	rounds := append([]ProbeRound(nil), c.Probes...)
	for _, l := range c.Loads {
		rounds = append(rounds, l.Before)
	}
	r.OneWay = true
	for _, pr := range rounds {
		fwd := w.is(pr.From, pr.To)
		if !fwd && !w.is(pr.To, pr.From) {
			continue
		}
		out, back, ok := oneWayLosses(pr.Probes)
		seq := out
		switch {
		case !ok:
			seq, r.OneWay = roundTrip(pr.Probes), false
		case !fwd:
			seq = back
		}
		for i, lost := range seq {
			r.Sent++
			if lost {
				r.Lost++
				if i == 0 || !seq[i-1] {
					r.Runs++
				}
			}
		}
	}
	return r
}

// LossCount is a direction's losses (Campaign.LossRuns).
type LossCount struct {
	Lost, Sent, Runs int
	// OneWay says every round counted the direction's own losses (the
	// reflector numbered the probes); false: some are round trip.
	OneWay bool
}

// Rate is the share lost (0 of none sent).
func (l LossCount) Rate() float64 {
	if l.Sent == 0 {
		return 0
	}
	return float64(l.Lost) / float64(l.Sent)
}

// MeanBurst is the mean length of the runs of losses (0 of none).
func (l LossCount) MeanBurst() float64 {
	if l.Runs == 0 {
		return 0
	}
	return float64(l.Lost) / float64(l.Runs)
}
