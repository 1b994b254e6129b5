package scenario

import (
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// planner reads a scenario's workloads: list before any step is made: each
// entry's kind, settings, quick: overrides, sweep and repeats, and the
// steps and settings they come to, against the file's bounds.
type planner struct {
	*fieldChecker
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

// plans reads the scenario's workloads: list, in top (the document's
// mapping): every entry, reporting every problem, and returns those that
// can be expanded; none if the plan is over the file's bounds.
func (v *planner) plans(top *yaml.Node, quick bool) []*planned {
	var list *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "workloads" {
			list = deref(top.Content[i+1])
		}
	}
	if absent(list) {
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		v.fail("workloads", "expected a list of workloads")
		return nil
	}
	if n := len(list.Content); n > MaxWorkloads {
		v.FailErr("workloads", yamlfile.ErrTooLarge, "%d workloads: a file holds at most %d (split the study into several files)", n, MaxWorkloads)
		return nil
	}
	plan := make([]*planned, len(list.Content))
	for i, n := range list.Content {
		plan[i] = v.plan(fmt.Sprintf("workloads[%d]", i), deref(n), quick)
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
			return nil
		case values > MaxPlanValues:
			v.FailErr(p.field, yamlfile.ErrTooLarge, "with this workload the file's steps hold %d settings or more (each step's, aliases expanded): a file holds at most %d (sweep fewer values, or shorten the lists)", values, MaxPlanValues)
			return nil
		}
	}
	var ok []*planned
	for _, p := range plan {
		if p.ok {
			ok = append(ok, p)
		}
	}
	return ok
}

// plan reads one entry of workloads: its kind, settings, sweep and
// repeats, and counts its steps.
func (v *planner) plan(field string, n *yaml.Node, quick bool) *planned {
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
func (v *planner) sweep(field string, n yaml.Node) ([]axis, bool) {
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
