package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// File is a whole scenario: the test-bed and the workloads run on it, each
// expanded into the steps of its sweep.
type File struct {
	Testbed   *Testbed
	Workloads []Workload
	// Events are the run's timeline, from its start.
	Events []Event
	// Quick says the steps are the shortened ones of the quick: blocks.
	Quick bool
}

// Workload is one workload of a scenario and the steps of its sweep.
type Workload struct {
	Name  string
	Kind  results.Kind
	Steps []Step
	// Events are the workload's timeline, from the start of each step.
	Events []Event
	// Capture captures links inside the engine during each step.
	Capture *Capture
	// Watch samples the TCP state of hosts' connections during each step.
	Watch []Watch
}

// Watch is a workload's watch of one host's TCP connections (as wanlab
// watch does it): those with Port (local or remote; 0, any) and to Peer
// (a host of the test-bed, an address or a prefix; "", any), every
// Interval.
type Watch struct {
	Host     string
	Port     int
	Peer     string
	Cgroup   string // processes of this control group (its path below the root)
	Interval time.Duration
}

// Capture is a workload's packet capture: the link directions (as testbed
// capture names them) captured during each of its steps into a pcapng
// file, at most Snaplen bytes of each packet (0: whole) and Count packets
// (0: all).
type Capture struct {
	Links          []string
	Snaplen, Count int
}

// Step is one run of a workload with its sweep's values applied.
type Step struct {
	// Params are the swept parameters' values as written, in sweep order,
	// plus "repeat" when the workload repeats.
	Params []Param
	// Spec is the step of the workload's kind, as its settings made it
	// (for command, a *command.Spec); set for every kind.
	Spec kind.Spec
	// The kinds not yet in a package of their own (issue 32) are also
	// here: exactly one is set, the one of the workload's kind, and is
	// Spec too. Command has moved to internal/workload/command.
	EventDB    *EventDB
	TaskFarm   *TaskFarm
	Mesh       *Mesh
	Throughput *Throughput
	Transfer   *Transfer
	Probe      *Probe
	Impact     *Impact
}

// Param is one swept parameter of a step.
type Param struct {
	Name, Value string
}

// Label is the step's parameters as "jobs=10 window=256KiB".
func (s Step) Label() string {
	var parts []string
	for _, p := range s.Params {
		parts = append(parts, p.Name+"="+p.Value)
	}
	return strings.Join(parts, " ")
}

type rawWorkload struct {
	Name   string    `yaml:"name"`
	Repeat *int      `yaml:"repeat"`
	Sweep  yaml.Node `yaml:"sweep"`
	Quick  yaml.Node `yaml:"quick"`
	Events *yaml.Node
	// Capture is read as a mapping: {links: [...], snaplen: N, count: N}.
	Capture *yaml.Node
	// Watch is a mapping {host, port, peer, interval} or a list of them.
	Watch *yaml.Node
}

// Bounds on the plan of one file: its workloads, and the steps their
// sweeps expand to, counted before any is expanded. A real study has a few
// workloads of tens of steps; a file over these is a mistake (or an
// attack), and refusing it early keeps validation within a second.
const (
	// MaxSteps bounds the steps of one workload's sweep (with its repeats).
	MaxSteps = 1000
	// MaxWorkloads bounds the workloads of a file.
	MaxWorkloads = 1000
	// MaxPlanSteps bounds the steps of all the workloads of a file.
	MaxPlanSteps = 10_000
	// MaxPlanValues bounds the settings of all the steps of a file, each
	// step's counted as YAML values with aliases expanded (a list of ten
	// clients is eleven): what validation decodes and checks.
	MaxPlanValues = 500_000
)

// planned is one entry of workloads: as read before its steps are made.
type planned struct {
	field string
	raw   rawWorkload
	name  string
	kind  results.Kind
	// body is the kind's settings, merge keys resolved; overrides are
	// quick:'s (under --quick), applied in order.
	body      *yaml.Node
	overrides map[string]*yaml.Node
	order     []string
	axes      []axis
	repeat    int
	// steps and values are the steps it expands to and the settings
	// (YAML values) of each, counted without expanding.
	steps, values int
	ok            bool
}

// workloads validates the scenario's workloads: list, in top (the
// document's mapping), into f. It reads every entry, refuses a plan over
// the file's bounds before making any step, then makes and checks every
// step of every workload, reporting every problem.
func (v *validator) workloads(f *File, top *yaml.Node) {
	var list *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "workloads" {
			list = deref(top.Content[i+1])
		}
	}
	if absent(list) {
		return
	}
	if list.Kind != yaml.SequenceNode {
		v.fail("workloads", "expected a list of workloads")
		return
	}
	if n := len(list.Content); n > MaxWorkloads {
		v.FailErr("workloads", yamlfile.ErrTooLarge, "%d workloads: a file holds at most %d (split the study into several files)", n, MaxWorkloads)
		return
	}
	plan := make([]*planned, len(list.Content))
	for i, n := range list.Content {
		plan[i] = v.plan(fmt.Sprintf("workloads[%d]", i), deref(n), f.Quick)
	}
	seen := map[string]string{}
	for _, p := range plan {
		if p.name == "" {
			continue
		}
		if first, dup := seen[p.name]; dup {
			v.fail(p.field+".name", "two workloads are called %q (%s and this one): give each a name", p.name, first)
			continue
		}
		seen[p.name] = p.field
	}
	steps, values := 0, 0
	for _, p := range plan {
		if !p.ok {
			continue
		}
		steps += p.steps
		values += p.steps * p.values
		switch {
		case steps > MaxPlanSteps:
			v.FailErr(p.field, yamlfile.ErrTooLarge, "with this workload the file's workloads have %d steps or more: a file holds at most %d (split the study into several files)", steps, MaxPlanSteps)
			return
		case values > MaxPlanValues:
			v.FailErr(p.field, yamlfile.ErrTooLarge, "with this workload the file's steps hold %d settings or more (each step's, aliases expanded): a file holds at most %d (sweep fewer values, or shorten the lists)", values, MaxPlanValues)
			return
		}
	}
	for _, p := range plan {
		if !p.ok {
			continue
		}
		if w, ok := v.expand(p, f.Testbed); ok {
			f.Workloads = append(f.Workloads, w)
		}
	}
}

// plan reads one entry of workloads: its kind, settings, sweep and
// repeats, and counts its steps.
func (v *validator) plan(field string, n *yaml.Node, quick bool) *planned {
	p := &planned{field: field, repeat: 1}
	if n.Kind != yaml.MappingNode {
		v.fail(field, "a workload is a mapping such as {eventdb: {...}, sweep: {jobs: [1, 5]}}")
		return p
	}
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i].Value, deref(n.Content[i+1])
		switch {
		case k == "name":
			p.raw.Name = val.Value
		case k == "repeat":
			r, err := strconv.Atoi(val.Value)
			if err != nil || r < 1 || r > MaxSteps {
				v.fail(field+".repeat", "repeat must be a whole number from 1 to %d", MaxSteps)
				ok = false
				continue
			}
			p.raw.Repeat, p.repeat = &r, r
		case k == "sweep":
			p.raw.Sweep = *val
		case k == "quick":
			p.raw.Quick = *val
		case k == "events":
			p.raw.Events = val
		case k == "capture":
			p.raw.Capture = val
		case k == "watch":
			p.raw.Watch = val
		case knownKind(results.Kind(k)):
			if p.kind != "" {
				v.fail(field+"."+k, "a workload has one kind; this one has %s and %s (make two workloads)", p.kind, k)
				ok = false
				continue
			}
			p.kind, p.body = results.Kind(k), val
		default:
			v.fail(field+"."+k, "unknown field %q (a workload has name, repeat, sweep, quick, events, capture, watch and one of %s)", k, kindNames())
			ok = false
		}
	}
	p.name = p.raw.Name
	if p.name == "" {
		p.name = string(p.kind)
	}
	if p.kind == "" {
		v.fail(field, "no workload kind: give one of %s", kindNames())
		return p
	}
	v.name(field+".name", "workload", p.name)
	body := p.body
	if absent(body) {
		body = &yaml.Node{Kind: yaml.MappingNode, Line: body.Line}
	}
	if body.Kind != yaml.MappingNode {
		v.fail(field+"."+string(p.kind), "expected the %s settings as a mapping", p.kind)
		return p
	}
	p.body = yamlfile.MergedMapping(body)

	// Under --quick, quick: overrides settings and may replace the sweep.
	p.overrides = map[string]*yaml.Node{}
	sweep := p.raw.Sweep
	if quick && p.raw.Quick.Kind != 0 {
		if p.raw.Quick.Kind != yaml.MappingNode {
			v.fail(field+".quick", "expected a mapping of settings to use with --quick")
			return p
		}
		for i := 0; i+1 < len(p.raw.Quick.Content); i += 2 {
			k, val := p.raw.Quick.Content[i], deref(p.raw.Quick.Content[i+1])
			if k.Value == "sweep" {
				sweep = *val
				continue
			}
			p.overrides[k.Value] = val
			p.order = append(p.order, k.Value)
		}
	}
	axes, sweepOK := v.sweep(field+".sweep", sweep)
	if !sweepOK || !ok {
		return p
	}
	p.axes = axes
	p.steps = p.repeat
	for _, a := range axes {
		if p.steps *= len(a.values); p.steps > MaxSteps {
			v.FailErr(field+".sweep", yamlfile.ErrTooLarge, "the sweep has more than %d steps: split it into several workloads", MaxSteps)
			return p
		}
	}
	p.values = yamlfile.CountValues(p.body, MaxPlanValues) + len(axes)
	for _, o := range p.overrides {
		p.values += yamlfile.CountValues(o, MaxPlanValues)
	}
	p.ok = true
	return p
}

// expand makes and checks every step of a planned workload, and its
// timeline, capture and watches.
func (v *validator) expand(p *planned, tb *Testbed) (Workload, bool) {
	before := v.Count()
	w := Workload{Name: p.name, Kind: p.kind}
	field := p.field + "." + string(p.kind)
	base := withSettings(p.body, p.overrides, p.order)
	// Where each setting is written, for messages: the kind's own, then
	// quick:'s, then each step's swept values (in step).
	v.AtNode(field, base)
	for i := 0; i+1 < len(base.Content); i += 2 {
		v.At(field+"."+base.Content[i].Value, base.Content[i].Line)
	}
	all := true
	for _, combo := range product(p.axes) {
		set := map[string]*yaml.Node{}
		var order []string
		var params []Param
		for j, val := range combo {
			set[p.axes[j].name] = val
			order = append(order, p.axes[j].name)
			params = append(params, Param{p.axes[j].name, val.Value})
		}
		settings := withSettings(base, set, order)
		for r := range p.repeat {
			step, ok := v.step(field, p.kind, settings, set, tb)
			if !ok {
				all = false
				break // its repeats are the same step
			}
			step.Params = slices.Clone(params)
			if p.repeat > 1 {
				step.Params = append(step.Params, Param{"repeat", strconv.Itoa(r + 1)})
			}
			w.Steps = append(w.Steps, step)
		}
	}
	shortest := time.Duration(0)
	for _, s := range w.Steps {
		if l := s.Length(); l > 0 && (shortest == 0 || l < shortest) {
			shortest = l
		}
	}
	w.Events = v.events(p.field+".events", p.raw.Events, tb, shortest, tb.Seed)
	w.Capture = v.capture(p.field+".capture", p.raw.Capture, tb)
	w.Watch = v.watches(p.field+".watch", p.raw.Watch, tb)
	return w, all && v.Count() == before
}

// Length is how long the step lasts when its settings say (a duration, a
// count of probes); 0 when it ends as its work is done.
func (s Step) Length() time.Duration {
	if s.Spec == nil {
		return 0
	}
	return s.Spec.Length()
}

// deref follows a YAML alias (*anchor) to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

type axis struct {
	name   string
	values []*yaml.Node
}

// sweep reads a sweep: every axis is checked, and every value of each.
func (v *validator) sweep(field string, n yaml.Node) ([]axis, bool) {
	if n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		v.fail(field, "expected a mapping from a setting to its values, such as jobs: [1, 5, 10]")
		return nil, false
	}
	var axes []axis
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, vals := n.Content[i], deref(n.Content[i+1])
		if vals.Kind != yaml.SequenceNode || len(vals.Content) == 0 {
			v.failAt(k.Line, field+"."+k.Value, "a sweep needs a list of at least one value, such as [1, 5, 10]")
			ok = false
			continue
		}
		values := make([]*yaml.Node, len(vals.Content))
		for j, val := range vals.Content {
			if values[j] = deref(val); values[j].Kind != yaml.ScalarNode {
				v.failAt(values[j].Line, fmt.Sprintf("%s.%s[%d]", field, k.Value, j), "sweep values must be single values")
				ok = false
			}
		}
		axes = append(axes, axis{k.Value, values})
	}
	return axes, ok
}

// product lists every combination of the axes' values, the last axis
// varying fastest; no axes give one empty combination.
func product(axes []axis) [][]*yaml.Node {
	combos := [][]*yaml.Node{nil}
	for _, a := range axes {
		var next [][]*yaml.Node
		for _, c := range combos {
			for _, val := range a.values {
				next = append(next, append(slices.Clone(c), val))
			}
		}
		combos = next
	}
	return combos
}

// withSettings returns a copy of the mapping with the given keys set, each
// key placed at the line of its new value (a sweep's or quick:'s).
func withSettings(m *yaml.Node, set map[string]*yaml.Node, order []string) *yaml.Node {
	out := *m
	out.Content = slices.Clone(m.Content)
	for _, k := range order {
		val := set[k]
		key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k, Line: val.Line, Column: val.Column}
		replaced := false
		for i := 0; i+1 < len(out.Content); i += 2 {
			if out.Content[i].Value == k {
				out.Content[i], out.Content[i+1] = key, val
				replaced = true
			}
		}
		if !replaced {
			out.Content = append(out.Content, key, val)
		}
	}
	return &out
}

func (v *validator) failAt(line int, field, format string, args ...any) {
	v.At(field, line)
	v.fail(field, format, args...)
}

// step decodes and validates one step's settings of a kind; swept are the
// values its sweep set, whose lines its messages give.
func (v *validator) step(field string, k results.Kind, settings *yaml.Node, swept map[string]*yaml.Node, tb *Testbed) (Step, bool) {
	for name, val := range swept {
		v.At(field+"."+name, val.Line)
	}
	before := v.Count()
	var release func()
	decode := func(dst any) bool {
		problems := yamlfile.DecodeNode(settings, dst)
		for i, p := range problems {
			if errors.Is(p.Err, yamlfile.ErrUnknownField) {
				key := p.Field[strings.LastIndexAny(p.Field, ".]")+1:]
				problems[i].Msg = fmt.Sprintf("unknown %s setting %q", k, key)
			}
		}
		release = v.Decoded(field, problems)
		return true // validate what did decode too: every problem at once
	}
	defer func() {
		if release != nil {
			release()
		}
	}()
	s := v.decodeStep(field, k, decode, tb)
	return s, v.Count() == before
}

// host checks a reference to a host.
func (v *validator) host(field, name string, tb *Testbed) {
	if name == "" {
		v.fail(field, "missing: name a host of the test-bed")
		return
	}
	if !v.knownHost(name, tb) {
		var names []string
		for _, h := range tb.Hosts {
			names = append(names, h.Name)
		}
		v.fail(field, "unknown host %q (hosts: %s)", name, strings.Join(names, ", "))
	}
}

func (v *validator) pair(field, from, to string, tb *Testbed) {
	v.host(field+".from", from, tb)
	v.host(field+".to", to, tb)
	if from != "" && from == to {
		v.fail(field+".to", "from and to are the same host %q", from)
	}
	v.reaches(field+".to", from, to, tb)
}

func (v *validator) count(field string, n *int, def, lo, hi int) int {
	if n == nil {
		return def
	}
	if *n < lo || *n > hi {
		v.fail(field, "%d is out of range: from %d to %d", *n, lo, hi)
	}
	return *n
}

func (v *validator) size(field, s string, def int64) int64 {
	if s == "" {
		return def
	}
	z, err := units.ParseSize(s)
	if err != nil {
		v.fail(field, "%v", err)
	}
	return int64(z)
}

func (v *validator) duration(field, s string, def time.Duration) time.Duration {
	if s == "" {
		return def
	}
	d, err := units.ParseDuration(s)
	if err != nil {
		v.fail(field, "%v", err)
	}
	return d
}

// agentLimits are the limits a scenario's workloads are checked against
// before anything runs: those of an agent started with its defaults.
var agentLimits = limits.Default

// limit records a limit's refusal of a field, if any.
func (v *validator) limit(field string, err error) {
	if err != nil {
		v.fail(field, "%v (an agent's default limit)", err)
	}
}
