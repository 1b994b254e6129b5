package web

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// OpenAPI describes the API of Handler.
//
//go:embed openapi.yaml
var OpenAPI []byte

// Route is one method and pattern of the API.
type Route struct {
	Method, Pattern string
	handler         http.HandlerFunc
}

// Routes are the API's, as Handler serves them and openapi.yaml documents them.
func (a *API) Routes() []Route {
	s := a.svc
	return append([]Route{
		{"GET", "/api/v1/status", func(w http.ResponseWriter, r *http.Request) {
			snap := s.Snapshot()
			snap.Paths = nil
			if Identity(r) == "" {
				// Who signed in or acted, and from where, is for identities.
				snap.Events = slices.DeleteFunc(snap.Events, func(e core.Event) bool { return e.Audit })
			}
			writeJSON(w, http.StatusOK, snap)
		}},
		{"GET", "/api/v1/paths", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"paths": s.Snapshot().Paths})
		}},
		{"GET", "/api/v1/alerts", a.alerts},
		{"GET", "/api/v1/incidents", func(w http.ResponseWriter, r *http.Request) {
			// Bounded: the service follows at most a few hundred incidents.
			list := s.Incidents()
			if list == nil {
				list = []core.ActiveIncident{}
			}
			writeJSON(w, http.StatusOK, map[string]any{"incidents": list})
		}},
		{"GET", "/api/v1/interfaces", func(w http.ResponseWriter, r *http.Request) {
			ifaces, errs := s.Interfaces()
			if ifaces == nil {
				ifaces = []core.IfaceState{}
			}
			writeJSON(w, http.StatusOK, map[string]any{"interfaces": ifaces, "unreachable": errs})
		}},
		{"GET", "/api/v1/paths/{src}/{dst}/series", a.series},
		{"GET", "/api/v1/paths/{src}/{dst}/tests", a.tests},
		{"GET", "/api/v1/paths/{src}/{dst}/changes", a.changes},
		{"GET", "/api/v1/paths/{src}/{dst}/twin", a.twin},
		{"GET", "/api/v1/cost", costs{s}.cost},
		{"POST", "/api/v1/rank", costs{s}.rank},
		{"GET", "/api/v1/openapi.yaml", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/yaml")
			w.Write(OpenAPI)
		}},
	}, a.actionRoutes()...)
}

// Handler serves /metrics and the API under /api/v1/, behind Guard.
func (a *API) Handler() http.Handler { return a.Guard(a.Mux()) }

// Mux serves /metrics and the API, for a caller that guards it itself.
func (a *API) Mux() *http.ServeMux {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(a.svc), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	for _, rt := range a.Routes() {
		mux.HandleFunc(rt.Method+" "+rt.Pattern, rt.handler)
	}
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		problem(w, http.StatusNotFound, "no "+r.Method+" "+r.URL.Path+" in the API: see /api/v1/openapi.yaml")
	})
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func problem(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// archiveOr is svc's archive, or nil after answering 503 while it is
// unreachable.
func archiveOr(svc State, w http.ResponseWriter) *archive.Archive {
	ar := svc.Archive()
	if ar == nil {
		problem(w, http.StatusServiceUnavailable, "the archive is unreachable: results are buffered; try again later")
	}
	return ar
}

// listFromArchive answers with the list read reads from the archive, as
// JSON under key (an empty list, not null, when there is nothing): 503 if
// the archive is unreachable, 500 if the read fails.
func listFromArchive[T any](svc State, w http.ResponseWriter, key string, read func(*archive.Archive) ([]T, error)) {
	ar := archiveOr(svc, w)
	if ar == nil {
		return
	}
	list, err := read(ar)
	if err != nil {
		problem(w, http.StatusInternalServerError, err.Error())
		return
	}
	if list == nil {
		list = []T{}
	}
	writeJSON(w, http.StatusOK, map[string]any{key: list})
}

// timeParam reads an RFC 3339 time or Unix seconds, or a default.
func timeParam(r *http.Request, name string, def time.Time) (time.Time, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, true
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, true
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 && f < 1e11 {
		return time.Unix(0, int64(f*1e9)), true
	}
	return time.Time{}, false
}

// intParam reads a whole number from lo to hi, or a default.
func intParam(r *http.Request, name string, def, lo, hi int) (int, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, false
	}
	return n, true
}

// GET /api/v1/paths/{src}/{dst}/series?metric=M&from=T&to=T[&family=F]:
// of every family, each point saying its own, or of one (ipv4 or ipv6,
// the runs of a test run once per family; none: a test's one run).
func (a *API) series(w http.ResponseWriter, r *http.Request) {
	metric := r.URL.Query().Get("metric")
	if _, ok := core.ByName(metric); !ok {
		problem(w, http.StatusBadRequest, "metric: give one of the metrics of /api/v1/paths, as rtt_median_seconds, or of an interface, as in_bits_per_second")
		return
	}
	now := time.Now()
	from, ok1 := timeParam(r, "from", now.Add(-24*time.Hour))
	to, ok2 := timeParam(r, "to", now)
	if !ok1 || !ok2 || !from.Before(to) || to.Sub(from) > 400*24*time.Hour {
		problem(w, http.StatusBadRequest, "from and to: give RFC 3339 times or Unix seconds, from before to, at most 400 days apart")
		return
	}
	ar := archiveOr(a.svc, w)
	if ar == nil {
		return
	}
	most, ok := intParam(r, "max", archive.MaxPoints, 10, 100000)
	if !ok {
		problem(w, http.StatusBadRequest, "max: give 10 to 100000 points")
		return
	}
	var pts []archive.Point
	var err error
	switch family, one := r.URL.Query()["family"]; {
	case !one:
		pts, err = ar.Points(r.Context(), r.PathValue("src"), r.PathValue("dst"), metric, from, to)
	case len(family) != 1 || !slices.Contains([]string{core.IPv4, core.IPv6, "", "none"}, family[0]):
		problem(w, http.StatusBadRequest, "family: give ipv4 or ipv6 (a test's run of that family), or none (a test's one run); leave it out for every family")
		return
	default:
		f := family[0]
		if f == "none" {
			f = ""
		}
		pts, err = ar.FamilyPoints(r.Context(), r.PathValue("src"), r.PathValue("dst"), f, metric, from, to)
	}
	if err != nil {
		problem(w, http.StatusInternalServerError, err.Error())
		return
	}
	pts = Reduce(pts, most)
	if pts == nil {
		pts = []archive.Point{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"src": r.PathValue("src"), "dst": r.PathValue("dst"), "metric": metric, "points": pts})
}

// GET /api/v1/paths/{src}/{dst}/tests?test=T&limit=N: the last tests with
// both ends' CPU, to tell a slow host from a slow network.
func (a *API) tests(w http.ResponseWriter, r *http.Request) {
	limit, ok := intParam(r, "limit", 20, 1, 1000)
	if !ok {
		problem(w, http.StatusBadRequest, "limit: give 1 to 1000")
		return
	}
	listFromArchive(a.svc, w, "tests", func(ar *archive.Archive) ([]archive.TestRecord, error) {
		return ar.Tests(r.Context(), r.PathValue("src"), r.PathValue("dst"), r.URL.Query().Get("test"), limit)
	})
}

// GET /api/v1/paths/{src}/{dst}/changes?from=T&to=T: the test-bed's link
// changes on the path's links (either way) over a range; every change
// where the path's links are unknown.
func (a *API) changes(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	from, ok1 := timeParam(r, "from", now.Add(-24*time.Hour))
	to, ok2 := timeParam(r, "to", now)
	if !ok1 || !ok2 || !from.Before(to) {
		problem(w, http.StatusBadRequest, "from and to: give RFC 3339 times or Unix seconds, from before to")
		return
	}
	ar := archiveOr(a.svc, w)
	if ar == nil {
		return
	}
	all, err := ar.Changes(r.Context(), from, to)
	if err != nil {
		problem(w, http.StatusInternalServerError, err.Error())
		return
	}
	src, dst := r.PathValue("src"), r.PathValue("dst")
	links := a.svc.Via(src, dst)
	out := []archive.Change{}
	for _, c := range all {
		// A path whose links are unknown (real hosts, a viewer) sees every change.
		if len(links) == 0 || slices.ContainsFunc(c.Dirs, func(d string) bool { return slices.Contains(links, d) }) {
			out = append(out, c)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"changes": out})
}

// GET /api/v1/alerts[?since=T]: active alerts, or every alert since T.
func (a *API) alerts(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("since") == "" {
		writeJSON(w, http.StatusOK, map[string]any{"alerts": a.svc.Snapshot().Alerts})
		return
	}
	since, ok := timeParam(r, "since", time.Time{})
	if !ok {
		problem(w, http.StatusBadRequest, "since: give an RFC 3339 time or Unix seconds")
		return
	}
	listFromArchive(a.svc, w, "alerts", func(ar *archive.Archive) ([]archive.Alert, error) {
		return ar.Alerts(r.Context(), since, false)
	})
}

// Reduce keeps at most most points of a series for a chart: the time is cut
// into most/2 equal intervals and each keeps its lowest and its highest
// point, in time order, so that a dip or a spike still shows (each test's
// and family's points are kept apart).
func Reduce(pts []archive.Point, most int) []archive.Point {
	if len(pts) <= most || most < 2 {
		return pts
	}
	buckets := most / 2
	t0, t1 := pts[0].T, pts[len(pts)-1].T
	span := t1.Sub(t0) + 1
	type key struct {
		b            int
		test, family string
	}
	lo, hi := map[key]int{}, map[key]int{}
	for i, p := range pts {
		k := key{int(int64(p.T.Sub(t0)) * int64(buckets) / int64(span)), p.Test, p.Family}
		if j, ok := lo[k]; !ok || p.Value < pts[j].Value {
			lo[k] = i
		}
		if j, ok := hi[k]; !ok || p.Value > pts[j].Value {
			hi[k] = i
		}
	}
	keep := make([]bool, len(pts))
	for _, i := range lo {
		keep[i] = true
	}
	for _, i := range hi {
		keep[i] = true
	}
	out := make([]archive.Point, 0, 2*len(lo))
	for i, p := range pts {
		if keep[i] {
			out = append(out, p)
		}
	}
	return out
}
