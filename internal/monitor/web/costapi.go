package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/cost"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/units"
)

// Bounds of a rank request.
const (
	maxRankSources = 100
	maxRankBody    = 64 << 10
)

// costs answers the network cost questions (GET /api/v1/cost, POST
// /api/v1/rank) from what the archive holds.
type costs struct{ svc State }

// evidence gathers what the archive holds of a path and its end hosts over
// the baseline window: the inputs of a cost prediction.
func (c costs) evidence(ctx context.Context, ar *archive.Archive, src, dst string, now time.Time) (cost.Evidence, error) {
	cfg := c.svc.Config()
	ev := cost.Evidence{Src: src, Dst: dst}
	if tg, ok := cfg.Target(dst); ok {
		ev.Target = tg.Kind // what the prediction cannot know of it, it says
	}
	from := now.Add(-cfg.Baseline.Window)
	ev.Twin = twinRef(src, dst, from, now) // named if the history holds enough for one
	tests := map[string]core.Test{}
	for _, t := range cfg.Tests {
		tests[t.Name] = t
	}
	read := func(src, dst string, metric core.Name) ([]archive.Point, error) {
		pts, err := ar.Points(ctx, src, dst, string(metric), from, now)
		if err != nil {
			return nil, fmt.Errorf("reading %s of %s->%s: %w", metric, src, dst, err)
		}
		return pts, nil
	}
	pts, err := read(src, dst, core.ThroughputRate)
	if err != nil {
		return ev, err
	}
	for _, p := range pts {
		t, ok := tests[p.Test]
		if !ok {
			continue // a test no longer configured: its streams are unknown
		}
		smp := cost.Sample{At: p.T, BitsPerSecond: p.Value, Streams: t.Streams, Window: t.Window}
		switch t.Type {
		case core.Throughput:
			smp.Bytes = int64(p.Value / 8 * t.Duration.Seconds())
			ev.Throughput = append(ev.Throughput, smp)
		case core.Transfer:
			smp.Bytes = t.Bytes
			ev.Transfers = append(ev.Transfers, smp)
		}
	}
	// The path's floor RTT and its loss, from the latest probe summaries.
	rtts, err := read(src, dst, core.RTTMin)
	if err != nil {
		return ev, err
	}
	losses, err := read(src, dst, core.LossRatio)
	if err != nil {
		return ev, err
	}
	rtts, losses = rtts[max(len(rtts)-recentSummaries, 0):], losses[max(len(losses)-recentSummaries, 0):]
	if len(rtts) > 0 {
		vs := make([]float64, len(rtts))
		for i, p := range rtts {
			vs[i] = p.Value
		}
		ev.RTT = time.Duration(archive.Summarize(vs).Median * float64(time.Second))
		ev.ProbesAt = rtts[len(rtts)-1].T
	}
	var lost float64
	for _, p := range losses {
		t, ok := tests[p.Test]
		if !ok || t.Type != core.Probe {
			continue
		}
		n := t.Rate * t.Summary.Seconds()
		ev.Probes += int(n)
		lost += p.Value * n
	}
	if ev.Probes > 0 {
		ev.Loss = lost / float64(ev.Probes)
	}
	for _, d := range []struct {
		host   string
		metric core.Name
		into   *[]cost.Sample
	}{{src, core.DiskRead, &ev.SrcRead}, {dst, core.DiskWrite, &ev.DstWrite}} {
		pts, err := read(d.host, d.host, d.metric)
		if err != nil {
			return ev, err
		}
		for _, p := range pts {
			*d.into = append(*d.into, cost.Sample{At: p.T, BitsPerSecond: p.Value})
		}
	}
	return ev, nil
}

// recentSummaries is how many of a path's latest probe summaries its RTT
// and loss come from.
const recentSummaries = 20

// knownHost says whether a host is in the configuration.
func (c costs) knownHost(h string) bool {
	return slices.Contains(c.svc.Config().Hosts(), h)
}

// unknownEnd says why h is no source (dst false) or destination of a
// prediction ("" if it is one): a source is a host, a destination a host
// or a target (a far end without an agent).
func (c costs) unknownEnd(h string, dst bool) string {
	switch {
	case c.knownHost(h):
		return ""
	case c.svc.Config().IsTarget(h):
		if dst {
			return ""
		}
		return fmt.Sprintf("%q is a target, a far end that runs no agent: it is never a source", h)
	}
	return fmt.Sprintf("no host %q in the monitoring configuration", h)
}

// sizeParam reads a size in bytes, with or without a unit (10GB, 1e9).
func sizeParam(v string) (int64, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
		return n, nil
	}
	z, err := units.ParseSize(v)
	if err != nil || z < 1 {
		return 0, fmt.Errorf("%q: give a size in bytes, as 1000000000 or 1GB", v)
	}
	return int64(z), nil
}

// diskMode reads mode: disk (the default: a file from disk to disk) or memory.
func diskMode(v string) (bool, error) {
	switch v {
	case "", "disk":
		return true, nil
	case "memory":
		return false, nil
	}
	return false, fmt.Errorf("mode %q: give disk (file to file, the default) or memory", v)
}

// GET /api/v1/cost?src=A&dst=B&bytes=N[&mode=disk|memory]
func (c costs) cost(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	src, dst := q.Get("src"), q.Get("dst")
	if src == "" || dst == "" || src == dst {
		problem(w, http.StatusBadRequest, "give src and dst, two different hosts")
		return
	}
	bytes, err := sizeParam(q.Get("bytes"))
	if err != nil {
		problem(w, http.StatusBadRequest, "bytes: "+err.Error())
		return
	}
	disk, err := diskMode(q.Get("mode"))
	if err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	for i, h := range []string{src, dst} {
		if why := c.unknownEnd(h, i == 1); why != "" {
			problem(w, http.StatusNotFound, why)
			return
		}
	}
	ar := archiveOr(c.svc, w)
	if ar == nil {
		return
	}
	now := time.Now()
	ev, err := c.evidence(r.Context(), ar, src, dst, now)
	if err != nil {
		problem(w, http.StatusInternalServerError, err.Error())
		return
	}
	p, err := cost.Predict(ev, bytes, disk, now)
	if errors.Is(err, cost.ErrNoData) {
		problem(w, http.StatusNotFound, err.Error()+" in the last "+c.window())
		return
	}
	if err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// RankRequest is POST /api/v1/rank's body.
type RankRequest struct {
	Dst     string   `json:"dst"`
	Bytes   int64    `json:"bytes"`
	Sources []string `json:"sources"`
	Mode    string   `json:"mode,omitempty"`
}

// RankAnswer is POST /api/v1/rank's answer.
type RankAnswer struct {
	Dst     string            `json:"dst"`
	Bytes   int64             `json:"bytes"`
	Ranking []cost.Prediction `json:"ranking"`
	Refused []cost.Refusal    `json:"refused"`
}

// POST /api/v1/rank {"dst": "B", "bytes": N, "sources": ["A", "C"]}
func (c costs) rank(w http.ResponseWriter, r *http.Request) {
	var req RankRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRankBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		problem(w, http.StatusBadRequest, "body: give JSON as {\"dst\": \"B\", \"bytes\": 1000000000, \"sources\": [\"A\", \"C\"]}: "+err.Error())
		return
	}
	disk, err := diskMode(req.Mode)
	switch {
	case err != nil:
		problem(w, http.StatusBadRequest, err.Error())
		return
	case req.Dst == "" || req.Bytes < 1:
		problem(w, http.StatusBadRequest, "give dst and a positive bytes")
		return
	case len(req.Sources) == 0 || len(req.Sources) > maxRankSources:
		problem(w, http.StatusBadRequest, fmt.Sprintf("sources: give 1 to %d candidate hosts", maxRankSources))
		return
	case c.unknownEnd(req.Dst, true) != "":
		problem(w, http.StatusNotFound, c.unknownEnd(req.Dst, true))
		return
	}
	ar := archiveOr(c.svc, w)
	if ar == nil {
		return
	}
	now := time.Now()
	ans := RankAnswer{Dst: req.Dst, Bytes: req.Bytes, Ranking: []cost.Prediction{}, Refused: []cost.Refusal{}}
	var evs []cost.Evidence
	for _, src := range req.Sources {
		switch {
		case src == req.Dst:
			ans.Refused = append(ans.Refused, cost.Refusal{Src: src, Reason: "the destination itself"})
		case c.svc.Config().IsTarget(src):
			ans.Refused = append(ans.Refused, cost.Refusal{Src: src, Reason: "a target, a far end that runs no agent: never a source"})
		case !c.knownHost(src):
			ans.Refused = append(ans.Refused, cost.Refusal{Src: src, Reason: "not a host of the monitoring configuration"})
		default:
			ev, err := c.evidence(r.Context(), ar, src, req.Dst, now)
			if err != nil {
				problem(w, http.StatusInternalServerError, err.Error())
				return
			}
			evs = append(evs, ev)
		}
	}
	ranked, refused := cost.Rank(evs, req.Bytes, disk, now)
	ans.Ranking = append(ans.Ranking, ranked...)
	ans.Refused = append(ans.Refused, refused...)
	writeJSON(w, http.StatusOK, ans)
}

// window says how far back predictions look.
func (c costs) window() string {
	return core.Days(c.svc.Config().Baseline.Window)
}
