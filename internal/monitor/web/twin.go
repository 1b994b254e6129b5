package web

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/wanlab/wanlab/internal/cost"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/twin"
)

// Bounds of a twin's history: the span it is fitted from by default and
// at most, and the probe summaries fitted (both ways, newest first: past
// the bound the older summaries are left out, and the answer says so),
// whose fit's time grows faster than their number: 2000 fit in about a
// second.
const (
	twinSpan         = 7 * 24 * time.Hour
	maxTwinSpan      = 31 * 24 * time.Hour
	maxTwinSummaries = 2000
)

// fitting holds the one twin being fitted at a time: a fit takes a core
// for up to seconds, and anyone who may read may ask for one.
var fitting = make(chan struct{}, 1)

// twinScenario is the name of the scenario a twin download holds, as
// wanlab twin's default --name.
const twinScenario = "twin"

// TwinURL is the API's address of the twin of the path from src to dst
// (the dashboard's "download twin").
func TwinURL(src, dst string) string {
	return "/api/v1/paths/" + url.PathEscape(src) + "/" + url.PathEscape(dst) + "/twin"
}

// twinRef names the twin fitted from the history between from and to,
// for a cost answer; from is held to the twin's longest span.
func twinRef(src, dst string, from, to time.Time) *cost.TwinRef {
	to = to.Truncate(time.Second).Add(time.Second) // the newest point read is in
	from = from.Truncate(time.Second)
	if to.Sub(from) > maxTwinSpan {
		from = to.Add(-maxTwinSpan)
	}
	q := url.Values{"from": {from.UTC().Format(time.RFC3339)}, "to": {to.UTC().Format(time.RFC3339)}}
	return &cost.TwinRef{Href: TwinURL(src, dst) + "?" + q.Encode(), FittedFrom: from.UTC(), To: to.UTC()}
}

// TwinHistory is the span of history a twin answer is fitted from.
type TwinHistory struct {
	From      time.Time `json:"from"`
	To        time.Time `json:"to"`
	Points    int       `json:"points"`
	Summaries int       `json:"summaries"`
	// ProbesFrom is where the probe summaries fitted start when the bound
	// on them was reached (Cut): the older ones were left out.
	ProbesFrom *time.Time `json:"probes_from,omitempty"`
	Cut        bool       `json:"cut,omitempty"`
}

// TwinAnswer is GET .../twin?format=json's answer: the twin as wanlab
// twin --json prints it ("forward" and "reverse" with their fixed fields,
// evidence and unknowns), and the history it is fitted from.
type TwinAnswer struct {
	*twin.Twin
	History TwinHistory `json:"history"`
}

// GET /api/v1/paths/{src}/{dst}/twin?from=T&to=T&format=yaml|json[&family=F]:
// the twin of the path fitted from its history, both ways, of one address
// family (ipv4 or ipv6; none: the one with the most probe summaries)
// (twin.ReadHistory, as wanlab twin --db reads it): a scenario to
// download, or its values.
func (a *API) twin(w http.ResponseWriter, r *http.Request) {
	src, dst := r.PathValue("src"), r.PathValue("dst")
	q := r.URL.Query()
	format := q.Get("format")
	if format != "" && format != "yaml" && format != "json" {
		problem(w, http.StatusBadRequest, "format: give yaml (the scenario, the default) or json (the fitted values)")
		return
	}
	if src == dst {
		problem(w, http.StatusBadRequest, "a path joins two different hosts")
		return
	}
	c := costs{a.svc}
	for i, h := range []string{src, dst} {
		if why := c.unknownEnd(h, i == 1); why != "" {
			problem(w, http.StatusNotFound, why)
			return
		}
	}
	to, ok2 := timeParam(r, "to", time.Now())
	from, ok1 := timeParam(r, "from", to.Add(-twinSpan))
	if !ok1 || !ok2 || !from.Before(to) || to.Sub(from) > maxTwinSpan {
		problem(w, http.StatusBadRequest, fmt.Sprintf("from and to: give RFC 3339 times or Unix seconds, from before to, at most %s apart", core.Days(maxTwinSpan)))
		return
	}
	family := q.Get("family")
	if family != "" && family != core.IPv4 && family != core.IPv6 {
		problem(w, http.StatusBadRequest, "family: give ipv4 or ipv6 (the address family fitted); leave it out for the one with the most probe summaries")
		return
	}
	ar := archiveOr(a.svc, w)
	if ar == nil {
		return
	}
	select {
	case fitting <- struct{}{}:
		defer func() { <-fitting }()
	default:
		w.Header().Set("Retry-After", "5")
		problem(w, http.StatusServiceUnavailable, "another twin is being fitted: try again in a few seconds")
		return
	}
	h, err := twin.ReadHistory(r.Context(), ar, src, dst, twin.HistoryOptions{From: from, To: to, Limit: maxTwinSummaries, Family: family})
	if err != nil {
		problem(w, http.StatusInternalServerError, err.Error())
		return
	}
	span := fmt.Sprintf("from %s to %s", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	if h.Empty() {
		problem(w, http.StatusNotFound, fmt.Sprintf("the archive holds no results of the path between %s and %s %s: a twin would rest on nothing", src, dst, span))
		return
	}
	tw, err := twin.New(h.Campaign)
	if err != nil {
		problem(w, http.StatusInternalServerError, err.Error())
		return
	}
	hist := TwinHistory{From: from.UTC(), To: to.UTC(), Points: h.Points, Summaries: h.Summaries, Cut: h.Cut}
	if h.Cut {
		t := h.ProbesFrom.UTC()
		hist.ProbesFrom = &t
	}
	if format == "json" {
		writeJSON(w, http.StatusOK, TwinAnswer{Twin: tw, History: hist})
		return
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Fitted by wanlab serve from the history of the path %s: %d points, %d probe summaries.\n", span, h.Points, h.Summaries)
	if h.Cut {
		fmt.Fprintf(&b, "# Only the newest %d probe summaries are fitted: those before %s are left out (the rates are of the whole span).\n",
			maxTwinSummaries, hist.ProbesFrom.Format(time.RFC3339))
	}
	if err := twin.WriteScenario(&b, tw, twinScenario); errors.Is(err, twin.ErrName) {
		problem(w, http.StatusUnprocessableEntity, fmt.Sprintf("a scenario cannot name the hosts %q and %q (%v): ask format=json for the fitted values", src, dst, twin.ErrName))
		return
	} else if err != nil {
		problem(w, http.StatusInternalServerError, err.Error())
		return
	}
	// WriteScenario took both names: letters, digits, '-' and '_' only.
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": "twin-" + src + "-" + dst + ".yaml"}))
	w.WriteHeader(http.StatusOK)
	w.Write(b.Bytes())
}
