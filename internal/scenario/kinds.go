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

// decodeStep decodes and checks one step's settings of kind k, through
// the registry.
func (v *validator) decodeStep(field string, k results.Kind, decode kind.Decoder, tb *Testbed) Step {
	var s Step
	if kd, ok := kinds.Lookup(k); ok {
		s.Spec = kd.Decode(decode, &check{v: v, field: field, tb: tb})
	}
	return s
}

// knownKind says whether k is a workload kind.
func knownKind(k results.Kind) bool {
	_, registered := kinds.Lookup(k)
	return registered
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
func (c *check) Problems() int                          { return c.v.Count() }

func (c *check) Duration(field, s string, def time.Duration) time.Duration {
	return c.v.duration(c.at(field), s, def)
}

func (c *check) Size(field, s string, def int64) int64 { return c.v.size(c.at(field), s, def) }

func (c *check) Count(field string, n *int, def, lo, hi int) int {
	return c.v.count(c.at(field), n, def, lo, hi)
}
