package scenario

import (
	"slices"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kinds"
)

// decodeStep decodes and checks one step's settings of kind k: through the
// registry, or the legacy table of the kinds not yet in it.
func (v *validator) decodeStep(field string, k results.Kind, decode kind.Decoder, tb *Testbed) Step {
	var s Step
	if kd, ok := kinds.Lookup(k); ok {
		s.Spec = kd.Decode(decode, &check{v: v, field: field, tb: tb})
	} else if legacy, ok := legacyKinds[k]; ok {
		legacy(v, field, decode, tb, &s)
	}
	return s
}

// knownKind says whether k is a workload kind.
func knownKind(k results.Kind) bool {
	_, registered := kinds.Lookup(k)
	_, legacy := legacyKinds[k]
	return registered || legacy
}

// kindNames lists the workload kinds, for messages: in the order
// documentation lists them, then any other registered.
func kindNames() string {
	var names []string
	for _, k := range results.Kinds {
		names = append(names, string(k))
	}
	for _, k := range kinds.All() {
		if !slices.Contains(results.Kinds, k.Name) {
			names = append(names, string(k.Name))
		}
	}
	return strings.Join(names, ", ")
}

// legacyKind decodes one step's settings of a kind not yet in the
// registry into its field of s, and sets s.Spec.
type legacyKind func(v *validator, field string, decode kind.Decoder, tb *Testbed, s *Step)

// legacyKinds are the kinds still decoded here (issue 32): each moves to
// a package of its own, registered in internal/workload/kinds, and leaves
// this table.
var legacyKinds = map[results.Kind]legacyKind{
	results.EventDB:    legacy((*validator).eventDB, func(s *Step, e *EventDB) { s.EventDB = e }),
	results.TaskFarm:   legacy((*validator).taskFarm, func(s *Step, t *TaskFarm) { s.TaskFarm = t }),
	results.Mesh:       legacy((*validator).mesh, func(s *Step, m *Mesh) { s.Mesh = m }),
	results.Throughput: legacy((*validator).throughput, func(s *Step, t *Throughput) { s.Throughput = t }),
	results.Transfer:   legacy((*validator).transfer, func(s *Step, t *Transfer) { s.Transfer = t }),
	results.Probe:      legacy((*validator).probe, func(s *Step, p *Probe) { s.Probe = p }),
	results.Impact:     legacy((*validator).impact, func(s *Step, i *Impact) { s.Impact = i }),
}

// legacy makes a legacy kind's decoder: its settings decoded into the raw
// form R, checked by validate, and set as the step's field and its Spec.
func legacy[R any, P kind.Spec](validate func(v *validator, field string, r R, tb *Testbed) P, set func(*Step, P)) legacyKind {
	return func(v *validator, field string, decode kind.Decoder, tb *Testbed, s *Step) {
		var r R
		if !decode(&r) {
			return
		}
		p := validate(v, field, r, tb)
		set(s, p)
		s.Spec = p
	}
}

// check is the validator as a kind sees it: fields relative to a step's
// settings at field, hosts of tb.
type check struct {
	v     *validator
	field string
	tb    *Testbed
}

var _ kind.Check = (*check)(nil)

// at is a field relative to the step's settings as the validator names it.
func (c *check) at(field string) string {
	if field == "" {
		return c.field
	}
	return c.field + "." + field
}

func (c *check) Fail(field, format string, args ...any) { c.v.fail(c.at(field), format, args...) }
func (c *check) Host(field, name string)                { c.v.host(c.at(field), name, c.tb) }
func (c *check) Reaches(field, a, b string)             { c.v.reaches(c.at(field), a, b, c.tb) }
func (c *check) RealHosts() bool                        { return c.tb.RealHosts() }
func (c *check) Hosts() []string                        { return c.v.allHosts(c.tb) }
func (c *check) AllReach(field string, hosts []string)  { c.v.meshReaches(c.at(field), hosts, c.tb) }
func (c *check) Limits() limits.Limits                  { return agentLimits }
func (c *check) Limit(field string, err error)          { c.v.limit(c.at(field), err) }

func (c *check) Duration(field, s string, def time.Duration) time.Duration {
	return c.v.duration(c.at(field), s, def)
}

func (c *check) Size(field, s string, def int64) int64 { return c.v.size(c.at(field), s, def) }

func (c *check) Count(field string, n *int, def, lo, hi int) int {
	return c.v.count(c.at(field), n, def, lo, hi)
}

// The legacy kinds' specs (kind.Spec).

// Length is 0: the step ends as its jobs do.
func (e *EventDB) Length() time.Duration { return 0 }

// RoleHosts are the server's and the clients' hosts.
func (e *EventDB) RoleHosts() map[string][]string {
	return map[string][]string{"server": {e.Server}, "client": e.Clients}
}

// Length is 0: the step ends as its tasks do.
func (t *TaskFarm) Length() time.Duration { return 0 }

// RoleHosts are the master's and the workers' hosts.
func (t *TaskFarm) RoleHosts() map[string][]string {
	return map[string][]string{"master": {t.Master}, "worker": t.Workers}
}

// Length is the mesh's duration.
func (m *Mesh) Length() time.Duration { return m.Duration }

// RoleHosts is none: every host of a mesh is a node alike.
func (m *Mesh) RoleHosts() map[string][]string { return nil }

// Length is the test's duration.
func (t *Throughput) Length() time.Duration { return t.Duration }

// RoleHosts is none: a test between two hosts has no role figures.
func (t *Throughput) RoleHosts() map[string][]string { return nil }

// Length is 0: the step ends as the transfer does.
func (t *Transfer) Length() time.Duration { return 0 }

// RoleHosts is none: a transfer between two hosts has no role figures.
func (t *Transfer) RoleHosts() map[string][]string { return nil }

// Length is the time the probes take.
func (p *Probe) Length() time.Duration { return time.Duration(p.Count) * p.Interval }

// RoleHosts is none: probes between two hosts have no role figures.
func (p *Probe) RoleHosts() map[string][]string { return nil }

// Length is the load's duration.
func (i *Impact) Length() time.Duration { return i.Duration }

// RoleHosts is none: the load and the probes have no role figures.
func (i *Impact) RoleHosts() map[string][]string { return nil }
