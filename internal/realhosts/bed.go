package realhosts

import (
	"context"
	"crypto/tls"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/pki"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
)

// Bed is the hosts of an inventory as a backend.Bed. Its topology is the
// scenario's, as the expected paths, with each host's address the real
// one its agent tests on; for the measure verbs, with no scenario, it is
// the inventory's hosts alone.
type Bed struct {
	inv    *Inventory
	config *tls.Config

	mu   sync.Mutex
	topo *topology.Topology
}

// Open makes the bed of an inventory. expected is the scenario's topology
// (nil for the measure verbs); every one of its hosts must be in the
// inventory. No agent is dialled yet.
func Open(inv *Inventory, expected *topology.Topology) (*Bed, error) {
	config, err := pki.ClientConfig(inv.TLS)
	if err != nil {
		return nil, fmt.Errorf("the controller's TLS files (%s): %w", inv.Source, err)
	}
	topo := &topology.Topology{Name: inv.Name}
	if expected != nil {
		copied := *expected
		copied.Hosts = slices.Clone(expected.Hosts)
		topo = &copied
		var missing []string
		for _, h := range topo.Hosts {
			if _, ok := inv.Host(h.Name); !ok {
				missing = append(missing, h.Name)
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("the inventory %s has no agent for host %s of the scenario", inv.Source, strings.Join(missing, ", "))
		}
	} else {
		for _, h := range inv.Hosts {
			topo.Hosts = append(topo.Hosts, topology.Host{Name: h.Name})
		}
	}
	// A host's address is known once its agent is dialled; until then it
	// is the inventory's, if it gives one.
	for i := range topo.Hosts {
		h, _ := inv.Host(topo.Hosts[i].Name)
		topo.Hosts[i].Addr, topo.Hosts[i].Addr6 = h.Address, h.Address6
		if h.Family == scenario.FamilyIPv6 && h.Address6 != "" {
			topo.Hosts[i].Addr = h.Address6
		}
	}
	return &Bed{inv: inv, config: config, topo: topo}, nil
}

// Inventory is the bed's inventory.
func (b *Bed) Inventory() *Inventory { return b.inv }

// Topology is the expected topology, with the real test addresses of the
// hosts dialled so far.
func (b *Bed) Topology() *topology.Topology {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.topo
}

// Dial connects to a host's agent over TLS and learns its test address.
func (b *Bed) Dial(ctx context.Context, host string) (*agentapi.Client, error) {
	h, ok := b.inv.Host(host)
	if !ok {
		return nil, fmt.Errorf("the inventory %s has no host %q", b.inv.Source, host)
	}
	c, err := agentapi.DialTLS(ctx, host, h.Agent, b.config)
	if err != nil {
		return nil, err
	}
	addr, addr6, err := testAddresses(ctx, h, c.Info.GetTestAddress(), c.Info.GetTestAddress6())
	if err != nil {
		c.Close()
		return nil, err
	}
	// Copy on write: a topology handed out never changes under its reader.
	b.mu.Lock()
	t := *b.topo
	t.Hosts = slices.Clone(t.Hosts)
	for i := range t.Hosts {
		if t.Hosts[i].Name == host {
			t.Hosts[i].Addr, t.Hosts[i].Addr6 = addr, addr6
		}
	}
	b.topo = &t
	b.mu.Unlock()
	return c, nil
}

// Command cannot run anything on a real host: wanlab reaches it only
// through its agent.
func (b *Bed) Command(ctx context.Context, host string, argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Err = fmt.Errorf("host %s is a real host: wanlab runs commands only in emulated hosts, and reaches real ones through their agents", host)
	return cmd
}

// Counters of real hosts are the agents' own figures, reported with each
// test: the bed has none to sample.
func (b *Bed) Counters() (backend.Counters, error) {
	return backend.Counters{At: time.Now()}, nil
}

// Close lets the hosts go: their agents keep running.
func (b *Bed) Close() error { return nil }

// Start is the bed of a scenario on an inventory's real hosts: the
// scenario's topology, built nowhere, is the expected path.
func Start(inv *Inventory, source string, text []byte) (*Bed, error) {
	f, err := scenario.Parse(source, text, false)
	if err != nil {
		return nil, err
	}
	topo, err := topology.New(f.Testbed)
	if err != nil {
		return nil, err
	}
	return Open(inv, topo)
}
