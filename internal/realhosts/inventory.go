// Package realhosts is the backend of real hosts: agents on the network,
// reached over TLS 1.3 with mutual authentication, named by an inventory
// file that binds host names to agents. The same scenario that runs on the
// emulated test-bed runs here unchanged: its links are not built but are
// the expected path that measurements are compared with.
package realhosts

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wanlab/wanlab/internal/pki"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/yamlfile"
	"go.yaml.in/yaml/v3"
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
	// Family is the address family the hosts' tests use by default, where
	// a host does not say (Host.Family): "" for none.
	Family string
	// Targets are far ends that run no agent, which the measure verbs
	// test toward by name (--target NAME).
	Targets []Target
}

// Host is one host of an inventory.
type Host struct {
	Name string
	// Agent is the agent's control address, host:port.
	Agent string
	// Address is the host's test address, if the inventory gives it; else
	// the agent's own word, or the control address's. It is the IPv4
	// address, or the IPv6 one of a host given IPv6 alone.
	Address string
	// Address6 is the host's IPv6 test address, if the inventory gives
	// one (also when it is Address).
	Address6 string
	// Family is the address family the host's tests use by default (its
	// own family:, else the inventory's): scenario.FamilyIPv4,
	// FamilyIPv6, FamilyDual (IPv4 where both ends have it), or "" for
	// whichever the host has (IPv4 first).
	Family string
}

// DefaultWait is how long a test waits for a busy host unless the
// inventory says otherwise.
const DefaultWait = 30 * time.Second

type rawInventory struct {
	TLS     pki.Files                 `yaml:"tls"`
	Wait    string                    `yaml:"wait"`
	Family  string                    `yaml:"family"`
	Hosts   yamlfile.Ordered[rawHost] `yaml:"hosts"`
	Targets rawTargets                `yaml:"targets"`
}

type rawHost struct {
	Agent    string `yaml:"agent"`
	Address  string `yaml:"address"`
	Address6 string `yaml:"address6"`
	Family   string `yaml:"family"`
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
	base := filepath.Base(file)
	inv := &Inventory{Source: file, Name: base[:len(base)-len(filepath.Ext(base))], Wait: DefaultWait,
		TLS: raw.TLS.Relative(filepath.Dir(file))}
	for _, m := range raw.TLS.Missing() {
		c.Fail("tls."+m, "give the controller's %s file", m)
	}
	if raw.Wait != "" {
		d, err := units.ParseDuration(raw.Wait)
		if err != nil || d < 0 || d > time.Hour {
			c.Fail("wait", "%q: give a duration from 0s to 1h", raw.Wait)
		}
		inv.Wait = d
	}
	inv.Family = checkFamily(c, "family", raw.Family)
	if len(raw.Hosts) == 0 {
		c.Fail("hosts", "no hosts: bind each host name to its agent, as cnaf: {agent: 10.1.0.1:7400}")
	}
	for _, h := range raw.Hosts {
		f := "hosts." + h.Key
		if !scenario.ValidName(h.Key) {
			c.Fail(f, "host name %q must be 1-32 letters, digits, '-' or '_', starting with a letter or digit", h.Key)
		}
		if err := checkAgent(h.Value.Agent); err != nil {
			c.Fail(f+".agent", "%v", err)
		}
		inv.Hosts = append(inv.Hosts, hostAddresses(c, f, h.Key, h.Value, inv.Family))
	}
	inv.Targets = checkTargets(c, raw.Targets, inv.Hosts)
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

// FromScenario is the inventory of a scenario whose hosts name their
// agents: its TLS files (relative to the scenario's folder), or the
// controller's default ones (DefaultTLS).
func FromScenario(source string, tb *scenario.Testbed) (*Inventory, error) {
	if !tb.RealHosts() {
		return nil, fmt.Errorf("the hosts of %s name no agents: give an inventory (--inventory FILE)", source)
	}
	inv := &Inventory{Source: source, Name: tb.Name, Wait: DefaultWait}
	// A scenario of IPv6 alone says its hosts' tests are over IPv6; its
	// other families describe the emulated hosts' addresses, not these.
	if tb.Family == scenario.FamilyIPv6 {
		inv.Family = scenario.FamilyIPv6
	}
	if tb.TLS != nil {
		inv.TLS = tb.TLS.Relative(filepath.Dir(source))
	} else {
		files, err := DefaultTLS()
		if err != nil {
			return nil, fmt.Errorf("%s names no tls: files for its agents, and %w", source, err)
		}
		inv.TLS = files
	}
	for _, h := range tb.Hosts {
		inv.Hosts = append(inv.Hosts, Host{Name: h.Name, Agent: h.Agent, Family: inv.Family})
	}
	return inv, nil
}

// ControllerConfig is where a controller's default TLS files are named:
// $WANLAB_CONTROLLER_CONFIG, else $XDG_CONFIG_HOME/wanlab/controller.yaml
// (~/.config/wanlab/controller.yaml), holding tls: {ca:, cert:, key:}.
func ControllerConfig() string {
	if p := os.Getenv("WANLAB_CONTROLLER_CONFIG"); p != "" {
		return p
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "wanlab", "controller.yaml")
}

// DefaultTLS reads the controller's default TLS files from its config;
// paths in it are relative to its folder.
func DefaultTLS() (pki.Files, error) {
	path := ControllerConfig()
	data, err := os.ReadFile(path)
	if err != nil {
		return pki.Files{}, fmt.Errorf("the controller's config has none: %w", err)
	}
	var raw struct {
		TLS pki.Files `yaml:"tls"`
	}
	c, _, err := yamlfile.Decode(path, data, &raw, "the controller's config is empty: give tls: {ca:, cert:, key:}")
	if err != nil {
		return pki.Files{}, err
	}
	for _, m := range raw.TLS.Missing() {
		c.Fail("tls."+m, "give the controller's %s file", m)
	}
	files := raw.TLS.Relative(filepath.Dir(path))
	return files, c.Err()
}

// LoadHosts reads the hosts of a file that is either an inventory or a
// scenario whose hosts name agents (a scenario has a name:).
func LoadHosts(path string) (*Inventory, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var top map[string]any
	if yaml.Unmarshal(data, &top) == nil && top["name"] != nil {
		f, err := scenario.Parse(path, data, false)
		if err != nil {
			return nil, err
		}
		return FromScenario(path, f.Testbed)
	}
	return Parse(path, data)
}
