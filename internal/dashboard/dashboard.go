// Package dashboard serves wanlab serve's web pages: the mesh grid, a
// path's time series, and the monitored interfaces' utilisation, with every
// asset embedded so that it works offline.
package dashboard

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"log"
	"math"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/monitor/web"
	"github.com/wanlab/wanlab/internal/units"
)

//go:embed web
var assets embed.FS

//go:embed templates/*.html
var templateFS embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"pathURL": pathURL,
	"runURL": func(src, dst string) string {
		return "/api/v1/paths/" + url.PathEscape(src) + "/" + url.PathEscape(dst) + "/run"
	},
	"twinURL": web.TwinURL,
	"ifaceURL": func(device, iface string) string {
		return "/interfaces/" + url.PathEscape(device) + "/" + url.PathEscape(iface)
	},
	// An alert's ref holds slashes (rule/src/dst/test/time): escaped, it
	// is one segment of the route.
	"ackURL": func(ref string) string {
		return "/api/v1/alerts/" + url.PathEscape(ref) + "/ack"
	},
	"value": Format,
	"ago":   ago,
}).ParseFS(templateFS, "templates/*.html"))

// State is what the pages show of a running service.
type State interface {
	Snapshot() core.Snapshot
	Interfaces() ([]core.IfaceState, map[string]string)
	// Incidents are the open incidents: the faulty segments inferred.
	Incidents() []core.ActiveIncident
}

// Handler serves the dashboard of a running service at /, its assets under
// /static/, and the service's API and /metrics (api, its HTTP layer), all
// behind the API's Guard.
func Handler(svc State, api *web.API) http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "web")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(filesOnly{static})))
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "favicon.svg")
	})
	d := &dash{svc: svc}
	mux.HandleFunc("GET /{$}", d.grid)
	mux.HandleFunc("GET /path/{src}/{dst}", d.path)
	mux.HandleFunc("GET /interfaces", d.interfaces)
	mux.HandleFunc("GET /interfaces/{device}/{iface}", d.iface)
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		render(w, "login.html", page{Who: web.Identity(r)})
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if _, err := api.Login(w, r); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			render(w, "login.html", page{Error: err.Error()})
			return
		}
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
	mux.HandleFunc("POST /logout", func(w http.ResponseWriter, r *http.Request) {
		api.Logout(w, r)
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
	mux.Handle("/", api.Mux())
	return secure(api.Guard(mux))
}

// filesOnly is a file system whose folders cannot be opened: a file server
// of it serves its files and answers 404 for a folder, never a listing.
type filesOnly struct{ fs.FS }

func (f filesOnly) Open(name string) (fs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if fi, err := file.Stat(); err != nil || fi.IsDir() {
		file.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return file, nil
}

// secure sets the headers of every answer: no script, style or frame from
// anywhere but here, and no guessing of types.
func secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "same-origin")
		h.ServeHTTP(w, r)
	})
}

type dash struct{ svc State }

// page is what every page knows: who is signed in, and an error to show.
type page struct {
	Who, Error string
}

// render executes a page whole before anything is written, so that an
// error is a clean 500, not half a page.
func render(w http.ResponseWriter, name string, data any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		log.Printf("dashboard: rendering %s: %v", name, err)
		http.Error(w, "rendering the page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

// pathURL is a path page's address, each host escaped as a path segment.
func pathURL(src, dst string) string {
	return "/path/" + url.PathEscape(src) + "/" + url.PathEscape(dst)
}

// Format shows a metric's value in the unit people read it in (its unit
// in the registry, core.ByName).
func Format(metric string, v float64) string {
	m, _ := core.ByName(metric)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "?"
	case m.Unit == core.BitsPerSecond:
		return units.Rate(v).String() + "/s"
	case m.Unit == core.Seconds:
		ms := v * 1e3
		if ms >= 100 {
			return fmt.Sprintf("%.0f ms", ms)
		}
		return fmt.Sprintf("%.3g ms", ms)
	case m.Unit == core.Ratio:
		return units.FormatPercent(v)
	case m.Unit == core.Percent:
		return fmt.Sprintf("%.0f%%", v)
	case m.Unit == core.PPM:
		return fmt.Sprintf("%+.1f ppm", v)
	}
	return fmt.Sprintf("%.4g", v)
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return time.Since(t).Round(time.Second).String() + " ago"
}

// metricsOf are the metrics a test type's grid can show, the first by
// default (core.Of, as the archive names them).
func metricsOf(typ string) []string {
	var out []string
	for _, n := range core.Of(typ) {
		out = append(out, string(n))
	}
	return out
}

// Cell is one path of the grid.
type Cell struct {
	Class, Text, Title, Href string
}

// Grid is the mesh page's data.
type Grid struct {
	page
	Snap         core.Snapshot
	Tests        []TestChoice
	Test, Metric string
	Metrics      []string
	// Families are the chosen test's runs where it runs once per family;
	// Family the one shown.
	Families   []string
	Family     string
	Srcs, Dsts []string
	// Targets are the kinds of the destinations that run no agent (far
	// ends: iperf3, stamp, ping), by name: columns, never rows.
	Targets       map[string]string
	Rows          [][]Cell
	Alerts, Stale int
	// Incidents are the open ones; their segments mark the rows and
	// columns of the hosts whose every path out or in crosses them.
	Incidents []core.ActiveIncident
}

// TestChoice is a test the grid can show.
type TestChoice struct{ Name, Type string }

func (d *dash) grid(w http.ResponseWriter, r *http.Request) {
	snap := d.svc.Snapshot()
	g := Grid{Snap: snap, page: page{Who: web.Identity(r)}}
	for _, name := range snap.Configured {
		if i := slices.IndexFunc(snap.Paths, func(p core.PathView) bool { return p.Test == name }); i >= 0 {
			g.Tests = append(g.Tests, TestChoice{name, snap.Paths[i].Type})
		}
	}
	g.Test = r.URL.Query().Get("test")
	i := slices.IndexFunc(g.Tests, func(c TestChoice) bool { return c.Name == g.Test })
	if i < 0 && len(g.Tests) > 0 {
		i, g.Test = 0, g.Tests[0].Name
	}
	if i >= 0 {
		g.Metrics = metricsOf(g.Tests[i].Type)
	}
	g.Metric = r.URL.Query().Get("metric")
	if !slices.Contains(g.Metrics, g.Metric) && len(g.Metrics) > 0 {
		g.Metric = g.Metrics[0]
	}
	for _, p := range snap.Paths {
		if p.Test == g.Test && p.PerFamily && !slices.Contains(g.Families, p.Family) {
			g.Families = append(g.Families, p.Family)
		}
	}
	slices.Sort(g.Families)
	if g.Family = r.URL.Query().Get("family"); !slices.Contains(g.Families, g.Family) {
		g.Family = ""
		if len(g.Families) > 0 {
			g.Family = g.Families[0]
		}
	}
	cells := map[[2]string]core.PathView{}
	g.Targets = map[string]string{}
	var targets []string
	for _, p := range snap.Paths {
		if p.Test != g.Test || p.PerFamily && p.Family != g.Family {
			continue
		}
		cells[[2]string{p.Src, p.Dst}] = p
		if p.Target != "" && !slices.Contains(targets, p.Dst) {
			g.Targets[p.Dst] = p.Target
			targets = append(targets, p.Dst)
		}
		for _, h := range []string{p.Src, p.Dst} {
			if !slices.Contains(g.Srcs, h) && (h == p.Src || p.Target == "") {
				g.Srcs = append(g.Srcs, h)
			}
		}
	}
	g.Incidents = d.svc.Incidents()
	marked := map[[2]string]bool{} // {"row" or "col", host}
	for _, inc := range g.Incidents {
		for _, h := range inc.Rows {
			marked[[2]string{"row", h}] = true
		}
		for _, h := range inc.Columns {
			marked[[2]string{"col", h}] = true
		}
	}
	// One order for both axes, so that the diagonal is each host to itself;
	// the targets, destinations only, are the last columns.
	slices.Sort(g.Srcs)
	slices.Sort(targets)
	g.Dsts = slices.Concat(g.Srcs, targets)
	for _, src := range g.Srcs {
		row := make([]Cell, 0, len(g.Dsts))
		for _, dst := range g.Dsts {
			p, ok := cells[[2]string{src, dst}]
			if !ok {
				row = append(row, Cell{Class: "none"})
				continue
			}
			c := Cell{Href: pathURL(src, dst), Title: src + " → " + dst + ": " + p.State}
			switch p.State {
			case "ok", "alert":
				c.Class, c.Text = p.State, "–"
				if v, ok := p.Values[g.Metric]; ok {
					c.Text = Format(g.Metric, v)
				}
				if p.State == "alert" {
					g.Alerts++
				}
			case core.Elsewhere:
				c.Class, c.Text = "elsewhere", "elsewhere"
			default:
				c.Class, c.Text = "nodata", "no data"
				g.Stale++
			}
			if p.Reason != "" {
				c.Title += " (" + p.Reason + ")"
			}
			if p.Note != "" {
				c.Title += " (" + p.Note + ")"
			}
			if marked[[2]string{"row", src}] || marked[[2]string{"col", dst}] {
				c.Class += " incident"
				c.Title += " (crosses an incident's segment)"
			}
			row = append(row, c)
		}
		g.Rows = append(g.Rows, row)
	}
	render(w, "grid.html", g)
}

// PathPage is a path page's data.
type PathPage struct {
	page
	Src, Dst string
	Started  time.Time // the service's start: the charts' default range starts no earlier
	OnDemand []string  // the path's throughput-class tests, which a signed-in user may start
	Views    []core.PathView
	Alerts   []core.Alert
	Hops     []string
	// Target is the kind of far end Dst is when it runs no agent.
	Target string
}

func (d *dash) path(w http.ResponseWriter, r *http.Request) {
	src, dst := r.PathValue("src"), r.PathValue("dst")
	snap := d.svc.Snapshot()
	pg := PathPage{Src: src, Dst: dst, Started: snap.Started, page: page{Who: web.Identity(r)}}
	for _, p := range snap.Paths {
		if p.Src == src && p.Dst == dst {
			pg.Views = append(pg.Views, p)
			pg.Target = p.Target
			if p.Type == core.Throughput || p.Type == core.Transfer || p.Type == core.Disk {
				pg.OnDemand = append(pg.OnDemand, p.Test)
			}
			if len(p.Hops) > 0 {
				pg.Hops = p.Hops
			}
		}
	}
	if len(pg.Views) == 0 {
		w.WriteHeader(http.StatusNotFound)
	}
	for _, a := range snap.Alerts {
		if a.Src == src && a.Dst == dst {
			pg.Alerts = append(pg.Alerts, a)
		}
	}
	render(w, "path.html", pg)
}

// IfacePage is the interfaces' page data.
type IfacePage struct {
	page
	Ifaces      []core.IfaceState
	Unreachable map[string]string
	Device      string
	Iface       string
}

func (d *dash) interfaces(w http.ResponseWriter, r *http.Request) {
	ifaces, errs := d.svc.Interfaces()
	render(w, "interfaces.html", IfacePage{Ifaces: ifaces, Unreachable: errs, page: page{Who: web.Identity(r)}})
}

func (d *dash) iface(w http.ResponseWriter, r *http.Request) {
	render(w, "iface.html", IfacePage{Device: r.PathValue("device"), Iface: r.PathValue("iface"), page: page{Who: web.Identity(r)}})
}

func writeJSONTo(w http.ResponseWriter, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
