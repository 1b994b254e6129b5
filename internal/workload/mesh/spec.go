package mesh

import (
	"fmt"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// Kind is the mesh workload: its settings and their checks, its driver
// and its agent role, the node.
var Kind = kind.Kind{Name: results.Mesh, Decode: kind.DecodeWith(Check), Run: kind.RunWith("a mesh step", run), Roles: []kind.Role{nodeRole}, Traits: traits, Model: &model}

// DefaultPort is where mesh nodes listen unless the scenario says
// otherwise: the first of the test ports agents are deployed with
// (5201-5299, docs/deploy.md), and not an agent's own 7400.
const DefaultPort = 5201

// Spec is one step of a mesh workload: a node on every host, each moving
// files to the others until the duration is up.
type Spec struct {
	Hosts    []string
	Duration time.Duration
	MaxWait  time.Duration
	Sizes    []int64
	Streams  int
	Port     int
	// Disk makes the transfers disk to disk, as the seed's bbFTP ones were.
	Disk bool
}

// Length is the mesh's duration.
func (m *Spec) Length() time.Duration { return m.Duration }

// RoleHosts is none: every host of a mesh is a node alike.
func (m *Spec) RoleHosts() map[string][]string { return nil }

// Raw is a mesh step's settings as written.
type Raw struct {
	Hosts    []string `yaml:"hosts"`
	Duration string   `yaml:"duration"`
	MaxWait  string   `yaml:"max_wait"`
	Sizes    []string `yaml:"sizes"`
	Streams  *int     `yaml:"streams"`
	Port     *int     `yaml:"port"`
	Disk     bool     `yaml:"disk"`
}

// defaultSizes are the seed's file sizes.
var defaultSizes = []string{"1.6GB", "0.8GB", "0.3GB"}

// Check checks a mesh step's settings, reporting every problem to c. A
// mesh without hosts is among all the test-bed's hosts.
func Check(c kind.Check, r Raw) *Spec {
	m := &Spec{
		Hosts:    r.Hosts,
		Duration: c.Duration("duration", r.Duration, 10*time.Minute),
		MaxWait:  c.Duration("max_wait", r.MaxWait, time.Minute),
		Streams:  c.Count("streams", r.Streams, 16, 1, 256),
		Port:     c.Count("port", r.Port, DefaultPort, 1, 65535),
		Disk:     r.Disk,
	}
	if len(m.Hosts) == 0 {
		m.Hosts = c.Hosts()
	}
	for i, h := range r.Hosts {
		c.Host(fmt.Sprintf("hosts[%d]", i), h)
	}
	c.AllReach("hosts", m.Hosts)
	if len(m.Hosts) < 2 {
		c.Fail("hosts", "a mesh needs at least two hosts")
	}
	sizes := r.Sizes
	if len(sizes) == 0 {
		sizes = defaultSizes
	}
	for i, s := range sizes {
		f := fmt.Sprintf("sizes[%d]", i)
		z := c.Size(f, s, 0)
		if z < int64(m.Streams) {
			c.Fail(f, "%s is smaller than one byte per stream", s)
		}
		m.Sizes = append(m.Sizes, z)
	}
	if m.Duration <= 0 {
		c.Fail("duration", "must be positive")
	}
	lim := c.Limits()
	c.Limit("duration", lim.Duration("duration", m.Duration))
	c.Limit("max_wait", lim.Duration("max_wait", m.MaxWait))
	for i, z := range m.Sizes {
		c.Limit(fmt.Sprintf("sizes[%d]", i), lim.Bytes("file size", z))
	}
	return m
}
