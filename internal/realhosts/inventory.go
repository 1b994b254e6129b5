// Package realhosts is the backend of real hosts: agents on the network,
// reached over TLS 1.3 with mutual authentication, named by an inventory
// file that binds host names to agents. The same scenario that runs on the
// emulated test-bed runs here unchanged: its links are not built but are
// the expected path that measurements are compared with.
package realhosts

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/wanlab/wanlab/internal/pki"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// Inventory binds host names to the agents that measure from them.
type Inventory struct {
	Source string
	// Name is the inventory's name (its file's, without extension).
	Name string
	// TLS are the controller's files.
	TLS   pki.Files
	Hosts []Host
	// Wait is how long a test may wait for a host busy with another.
	Wait time.Duration
}

// Host is one host of an inventory.
type Host struct {
	Name string
	// Agent is the agent's control address, host:port.
	Agent string
	// Address is the host's test address, if the inventory gives it; else
	// the agent's own word, or the control address's.
	Address string
}

// DefaultWait is how long a test waits for a busy host unless the
// inventory says otherwise.
const DefaultWait = 30 * time.Second

type rawInventory struct {
	TLS   rawTLS                    `yaml:"tls"`
	Wait  string                    `yaml:"wait"`
	Hosts yamlfile.Ordered[rawHost] `yaml:"hosts"`
}

type rawTLS struct {
	CA   string `yaml:"ca"`
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

type rawHost struct {
	Agent   string `yaml:"agent"`
	Address string `yaml:"address"`
}

// Load reads and validates an inventory; relative paths in it are from
// its own directory.
func Load(path string) (*Inventory, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the inventory: %w", err)
	}
	return Parse(path, data)
}

// Parse validates an inventory read from file; a returned error is a
// *yamlfile.Error listing every problem.
func Parse(file string, data []byte) (*Inventory, error) {
	var raw rawInventory
	c, _, err := yamlfile.Decode(file, data, &raw, "the inventory is empty: it needs tls: and hosts: (README, real hosts)")
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(file)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	base := filepath.Base(file)
	inv := &Inventory{Source: file, Name: base[:len(base)-len(filepath.Ext(base))], Wait: DefaultWait,
		TLS: pki.Files{CA: rel(raw.TLS.CA), Cert: rel(raw.TLS.Cert), Key: rel(raw.TLS.Key)}}
	for _, f := range []struct{ field, v string }{{"ca", raw.TLS.CA}, {"cert", raw.TLS.Cert}, {"key", raw.TLS.Key}} {
		if f.v == "" {
			c.Fail("tls."+f.field, "give the controller's %s file", f.field)
		}
	}
	if raw.Wait != "" {
		d, err := units.ParseDuration(raw.Wait)
		if err != nil || d < 0 || d > time.Hour {
			c.Fail("wait", "%q: give a duration from 0s to 1h", raw.Wait)
		}
		inv.Wait = d
	}
	if len(raw.Hosts) == 0 {
		c.Fail("hosts", "no hosts: bind each host name to its agent, as cnaf: {agent: 10.1.0.1:7400}")
	}
	for _, h := range raw.Hosts {
		f := "hosts." + h.Key
		if !scenario.ValidName(h.Key) {
			c.Fail(f, "host name %q must be 1-32 letters, digits, '-' or '_', starting with a letter or digit", h.Key)
		}
		host, port, err := net.SplitHostPort(h.Value.Agent)
		if p, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || p < 1 || p > 65535 {
			c.Fail(f+".agent", "%q: give the agent's host:port, as 10.1.0.1:7400 or dtn01.example.org:7400", h.Value.Agent)
		}
		if a := h.Value.Address; a != "" && net.ParseIP(a) == nil {
			c.Fail(f+".address", "%q: give the host's test address as an IP address", a)
		}
		inv.Hosts = append(inv.Hosts, Host{Name: h.Key, Agent: h.Value.Agent, Address: h.Value.Address})
	}
	if err := c.Err(); err != nil {
		return nil, err
	}
	return inv, nil
}

// Host returns the host of that name.
func (inv *Inventory) Host(name string) (Host, bool) {
	for _, h := range inv.Hosts {
		if h.Name == name {
			return h, true
		}
	}
	return Host{}, false
}
