package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/command"
	"github.com/wanlab/wanlab/internal/workload/eventdb"
	"github.com/wanlab/wanlab/internal/workload/impact"
	"github.com/wanlab/wanlab/internal/workload/mesh"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/taskfarm"
	"github.com/wanlab/wanlab/internal/workload/throughput"
	"github.com/wanlab/wanlab/internal/workload/transfer"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// mergeBed has hosts for every role of every kind, all at one site.
const mergeBed = `name: merge
sites:
  s: {rate: 100Mbit, delay: 1ms}
hosts:
  a: {site: s}
  b: {site: s}
  c: {site: s}
  d: {site: s}
workloads:
`

// everyField is a value for every setting of every kind, none the
// default, as written in a flow mapping.
var everyField = map[results.Kind]map[string]string{
	results.EventDB: {"server": "a", "clients": "[b, c]", "events": "2000", "event_size": "20KB", "page_size": "4KiB",
		"events_per_job": "30", "jobs": "3", "client_cpu_per_event": "1ms", "server_cpu_per_page": "2ms",
		"server_model": "threads", "threads": "4", "timeout": "5s"},
	results.TaskFarm: {"master": "a", "workers": "[b, c]", "count": "4", "tasks": "50", "duration": "10ms",
		"work": "cpu", "result_size": "1KB", "prefetch": "2"},
	results.Mesh: {"hosts": "[a, b, c]", "duration": "30s", "max_wait": "2s", "sizes": "[1MB, 2MB]", "streams": "2",
		"port": "5300", "disk": "true"},
	results.Throughput: {"from": "a", "to": "b", "protocol": "udp", "streams": "2", "window": "1MiB", "duration": "3s",
		"congestion": "reno", "rate": "10Mbit"},
	results.Transfer: {"from": "a", "to": "b", "size": "10MB", "streams": "2", "window": "1MiB", "block": "64KiB",
		"compress": "true", "roundtrip": "true", "read_ahead": "false"},
	results.Probe:  {"from": "a", "to": "b", "count": "20", "interval": "10ms"},
	results.Impact: {"probe_from": "c", "probe_to": "d", "from": "a", "to": "b", "streams": "2", "window": "1MiB", "duration": "3s", "phase": "2s", "interval": "50ms"},
	results.Command: {"files": "[{host: a, name: f.txt, text: hello}]", "server": "{host: a, run: [srv], ready: 8080}",
		"clients": "[{host: b, run: [cli, \"{addr:a}\"]}]", "timeout": "1m"},
}

// insteadOf are settings a step gives in place of another of everyField's
// (never both), by the one they replace: eventdb's servers: for server:.
var insteadOf = map[results.Kind]map[string]string{results.EventDB: {"servers": "server"}}

// rawKinds are the raw settings of each kind, whose fields everyField must
// all give (or, for those of insteadOf, the one they replace).
var rawKinds = map[results.Kind]any{
	results.EventDB: eventdb.Raw{}, results.TaskFarm: taskfarm.Raw{}, results.Mesh: mesh.Raw{}, results.Throughput: throughput.Raw{},
	results.Transfer: transfer.Raw{}, results.Probe: probe.Raw{}, results.Impact: impact.Raw{}, results.Command: command.Raw{},
}

// TestMergeKeysEveryField: for every kind, every setting given in an
// anchored workload and merged into another with <<: gives the same steps
// as the settings written out (a merged threads: was lost when
// server_model's value was "threads").
func TestMergeKeysEveryField(t *testing.T) {
	for _, kind := range results.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			fields := everyField[kind]
			raw, ok := rawKinds[kind]
			if !ok {
				t.Fatalf("no raw settings known for kind %s", kind)
			}
			rt := reflect.TypeOf(raw)
			for i := range rt.NumField() {
				name, _, _ := strings.Cut(rt.Field(i).Tag.Get("yaml"), ",")
				if _, ok := fields[name]; !ok && insteadOf[kind][name] == "" {
					t.Errorf("everyField[%s] has no value for %s", kind, name)
				}
			}
			var kv []string
			for _, k := range sortedKeys(fields) {
				kv = append(kv, k+": "+fields[k])
			}
			settings := "{" + strings.Join(kv, ", ") + "}"
			written := mergeBed + fmt.Sprintf("  - {name: first, %s: %s}\n  - {name: second, %s: %s}\n", kind, settings, kind, settings)
			merged := mergeBed + fmt.Sprintf("  - {name: first, %s: &x %s}\n  - {name: second, %s: {<<: *x}}\n", kind, settings, kind)
			listMerged := mergeBed + fmt.Sprintf("  - {name: first, %s: &x %s}\n  - {name: second, %s: {<<: [*x]}}\n", kind, settings, kind)
			want, err := Parse("w.yaml", []byte(written), false)
			if err != nil {
				t.Fatalf("written out: %v", err)
			}
			for _, src := range []string{merged, listMerged} {
				got, err := Parse("m.yaml", []byte(src), false)
				if err != nil {
					t.Fatalf("merged: %v\n%s", err, src)
				}
				if !reflect.DeepEqual(got.Workloads[1].Steps, want.Workloads[1].Steps) {
					g, _ := json.Marshal(got.Workloads[1].Steps)
					w, _ := json.Marshal(want.Workloads[1].Steps)
					t.Errorf("merged:\n%s\nwritten out:\n%s", g, w)
				}
			}
		})
	}
}

// TestMergeKeysOverride: a mapping's own keys win over merged ones, and a
// sweep's values over both.
func TestMergeKeysOverride(t *testing.T) {
	src := mergeBed + `  - {name: first, eventdb: &db {server: a, clients: [b], server_model: threads, threads: 4, events: 1000, events_per_job: 10}}
  - name: second
    eventdb: {<<: *db, threads: 2, clients: [c]}
    sweep: {threads: [6, 8]}
`
	f, err := Parse("m.yaml", []byte(src), false)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{6, 8} {
		if e := f.Workloads[1].Steps[i].Spec.(*eventdb.Spec); e.Threads != want || e.ServerModel != "threads" || e.Clients[0] != "c" || e.Store.Events != 1000 {
			t.Errorf("step %d: %+v", i, e)
		}
	}
}

// maxPlan is a scenario at the bounds of a file: MaxWorkloads workloads
// of MaxPlanSteps steps in all, each step with clients settings (close to
// MaxPlanValues values in all), and MaxEvents events expanding to
// MaxTimedChanges changes.
func maxPlan() string { return plan(MaxPlanSteps / MaxWorkloads) }

// plan is maxPlan with perWorkload steps in each workload.
func plan(perWorkload int) string {
	var b strings.Builder
	b.WriteString("name: maxplan\nsites:\n  s: {rate: 1Gbit, delay: 1ms}\nhosts:\n")
	var clients []string
	for i := range 41 {
		fmt.Fprintf(&b, "  h%d: {site: s}\n", i)
		if i > 0 {
			clients = append(clients, fmt.Sprintf("h%d", i))
		}
	}
	eventsPer := MaxEvents / MaxWorkloads
	b.WriteString("workloads:\n")
	for w := range MaxWorkloads {
		fmt.Fprintf(&b, "  - name: w%d\n", w)
		if w == 0 {
			fmt.Fprintf(&b, "    eventdb: &db {server: h0, clients: &c [%s], events: 1000, events_per_job: 10}\n", strings.Join(clients, ", "))
			b.WriteString("    sweep: &sweep {jobs: [")
			for s := range perWorkload {
				if s > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%d", s+1)
			}
			b.WriteString("]}\n    events: &ev\n")
			for e := range eventsPer {
				// 5 occurrences of 2 changes each: 10 changes.
				fmt.Fprintf(&b, "      - {at: %dms, link: site s up, set: {delay: 2ms}, for: 1ms, every: 2ms, until: %dms}\n", e*20, e*20+9)
			}
			continue
		}
		b.WriteString("    eventdb: *db\n    sweep: *sweep\n    events: *ev\n")
	}
	return b.String()
}

// TestPlanBounds: a plan over a file's bounds is refused, counted before
// it is expanded, at the line of what passes the bound (ErrTooLarge); the
// issue's 89 KB file of 2,000 workloads sharing one 1,000-step sweep took
// 99 s and 1.65 GB, then passed.
func TestPlanBounds(t *testing.T) {
	bed := "name: b\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - between: [a, b]\n"
	var issue strings.Builder
	issue.WriteString(bed + "workloads:\n  - name: w0\n    probe: {from: a, to: b, count: 10, interval: 10ms}\n    sweep: &s {count: [")
	for i := range 999 {
		fmt.Fprintf(&issue, "%d, ", i+1)
	}
	issue.WriteString("1000]}\n")
	for i := 1; i < 2000; i++ {
		fmt.Fprintf(&issue, "  - {name: w%d, probe: {from: a, to: b, count: 10, interval: 10ms}, sweep: *s}\n", i)
	}
	var workloads strings.Builder
	workloads.WriteString(bed + "workloads:\n")
	for i := range MaxWorkloads + 1 {
		fmt.Fprintf(&workloads, "  - {name: w%d, probe: {from: a, to: b}}\n", i)
	}
	var events strings.Builder
	events.WriteString(bed + "events:\n")
	for i := range MaxEvents + 1 {
		fmt.Fprintf(&events, "  - {at: %dms, link: a->b, set: {delay: 1ms}}\n", i)
	}
	changes := bed + "events:\n  - {at: 0s, link: a->b, set: {delay: 1ms}, for: 1ms, every: 2ms, until: 1000s}\n"
	var values strings.Builder
	values.WriteString(bed + "workloads:\n  - name: w0\n    mesh: {hosts: &h [a, b")
	for range 600 {
		values.WriteString(", a")
	}
	values.WriteString("]}\n    repeat: 1000\n")
	for _, tc := range []struct {
		name, src, want string
		line            int
	}{
		{"the issue's 2,000 workloads", issue.String(), "aliases expand the file to more than 1000000 values", 993},
		{"workloads", workloads.String(), "1001 workloads: a file holds at most 1000", 7},
		{"steps", plan(MaxPlanSteps/MaxWorkloads + 1), "workloads[909]: with this workload the file's workloads have 10010 steps or more: a file holds at most 10000", 3693},
		{"bytes", bed + "# " + strings.Repeat("x", yamlfile.MaxFileSize) + "\n", "bytes: a file holds at most 1048576 (1 MiB)", 1},
		{"events", events.String(), "events: a file holds at most 10000", 7},
		{"changes", changes, "more than 100000 changes", 7},
		{"settings of every step", values.String(), "settings or more (each step's, aliases expanded): a file holds at most 500000", 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tc.src), false)
			if !errors.Is(err, yamlfile.ErrTooLarge) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrTooLarge and %q", err, tc.want)
			}
			var se *Error
			if errors.As(err, &se); se.Problems[0].Line != tc.line {
				t.Errorf("line %d, want %d", se.Problems[0].Line, tc.line)
			}
		})
	}
}

// TestMaxPlanAdmitted: a file at every bound is admitted and validated
// whole, within a bounded allocation (validate keeps under 200 MB; the
// benchmark below times it).
func TestMaxPlanAdmitted(t *testing.T) {
	src := []byte(maxPlan())
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err := Parse("max.yaml", src, false)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	steps, events := 0, 0
	for _, w := range f.Workloads {
		steps += len(w.Steps)
		events += len(Expand(w.Events))
	}
	if len(f.Workloads) != MaxWorkloads || steps != MaxPlanSteps || events != MaxTimedChanges {
		t.Errorf("%d workloads, %d steps, %d changes: want the bounds %d, %d, %d", len(f.Workloads), steps, events, MaxWorkloads, MaxPlanSteps, MaxTimedChanges)
	}
	if mb := (after.TotalAlloc - before.TotalAlloc) >> 20; mb > 200 {
		t.Errorf("validating a file at the bounds allocated %d MB, want at most 200", mb)
	}
}

// BenchmarkParseMaxPlan times validating a file at every bound: keep it
// under a second.
func BenchmarkParseMaxPlan(b *testing.B) {
	src := []byte(maxPlan())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("max.yaml", src, false); err != nil {
			b.Fatal(err)
		}
	}
}
