package runner

import (
	"context"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gosnmp/gosnmp"

	"github.com/wanlab/wanlab/internal/monitor/core"
)

// IF-MIB and SNMPv2-MIB objects the poller reads.
const (
	oidSysUpTime     = ".1.3.6.1.2.1.1.3.0"
	oidIfName        = ".1.3.6.1.2.1.31.1.1.1.1"
	oidIfHCInOctets  = ".1.3.6.1.2.1.31.1.1.1.6"
	oidIfHCOutOctets = ".1.3.6.1.2.1.31.1.1.1.10"
	oidIfHighSpeed   = ".1.3.6.1.2.1.31.1.1.1.15" // Mbit/s
	oidIfInOctets    = ".1.3.6.1.2.1.2.2.1.10"    // 32-bit, for agents without 64-bit counters
	oidIfOutOctets   = ".1.3.6.1.2.1.2.2.1.16"
	oidIfSpeed       = ".1.3.6.1.2.1.2.2.1.5" // bit/s, at most 2^32-1
)

// Counters are one reading of a device's interface counters.
type Counters struct {
	At     time.Time
	Uptime uint32 // sysUpTime, hundredths of a second
	Ifaces map[string]IfaceCounters
}

// IfaceCounters are one interface's octet counters and speed.
type IfaceCounters struct {
	In, Out uint64
	// Bits is the counters' width: 64 (ifHC*) or 32.
	Bits  int
	Speed float64 // bit/s, 0 unknown
}

// Rate is an interface's traffic between two readings.
type Rate struct {
	In    float64 `json:"in_bits_per_second"`
	Out   float64 `json:"out_bits_per_second"`
	Speed float64 `json:"speed_bits_per_second,omitempty"` // 0 unknown
}

// Rates turns two readings of a device into each interface's rates. A
// counter that went down wrapped (at 2^64, or 2^32 for 32-bit counters),
// unless the device rebooted between the readings (its uptime went back):
// then there is no rate until the next reading.
func Rates(prev, cur Counters) (map[string]Rate, bool) {
	dt := cur.At.Sub(prev.At).Seconds()
	if dt <= 0 || cur.Uptime < prev.Uptime {
		return nil, false
	}
	out := map[string]Rate{}
	for name, c := range cur.Ifaces {
		p, ok := prev.Ifaces[name]
		if !ok || p.Bits != c.Bits {
			continue
		}
		out[name] = Rate{In: 8 * float64(delta(p.In, c.In, c.Bits)) / dt, Out: 8 * float64(delta(p.Out, c.Out, c.Bits)) / dt, Speed: c.Speed}
	}
	return out, true
}

func delta(prev, cur uint64, bits int) uint64 {
	if cur >= prev {
		return cur - prev
	}
	if bits == 32 {
		return (1<<32 - prev) + cur
	}
	return (^uint64(0) - prev) + cur + 1
}

// snmpClient connects to a target as its configuration says.
func snmpClient(t core.SNMPTarget) (*gosnmp.GoSNMP, error) {
	host, port, err := net.SplitHostPort(t.Address)
	if err != nil {
		return nil, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("port %q: %w", port, err)
	}
	if t.Timeout <= 0 {
		t.Timeout = 5 * time.Second
	}
	g := &gosnmp.GoSNMP{Target: host, Port: uint16(p), Timeout: t.Timeout, Retries: 1, MaxRepetitions: 20, MaxOids: gosnmp.MaxOids}
	switch t.Version {
	case "2c":
		g.Version, g.Community = gosnmp.Version2c, t.Community
	default:
		g.Version, g.SecurityModel = gosnmp.Version3, gosnmp.UserSecurityModel
		usm := &gosnmp.UsmSecurityParameters{UserName: t.User}
		g.MsgFlags = gosnmp.NoAuthNoPriv
		if t.AuthProto != "" {
			g.MsgFlags = gosnmp.AuthNoPriv
			usm.AuthenticationProtocol, usm.AuthenticationPassphrase = gosnmp.SHA, t.AuthPass
			if t.AuthProto == "MD5" {
				usm.AuthenticationProtocol = gosnmp.MD5
			}
		}
		if t.PrivProto != "" {
			g.MsgFlags = gosnmp.AuthPriv
			usm.PrivacyProtocol, usm.PrivacyPassphrase = gosnmp.AES, t.PrivPass
			if t.PrivProto == "DES" {
				usm.PrivacyProtocol = gosnmp.DES
			}
		}
		g.SecurityParameters = usm
	}
	return g, g.Connect()
}

// Poll reads a device's interface counters once.
func Poll(t core.SNMPTarget) (Counters, error) {
	g, err := snmpClient(t)
	if err != nil {
		return Counters{}, fmt.Errorf("SNMP %s (%s): %w", t.Name, t.Address, err)
	}
	defer g.Conn.Close()
	fail := func(what string, err error) (Counters, error) {
		return Counters{}, fmt.Errorf("SNMP %s (%s): reading %s: %w", t.Name, t.Address, what, err)
	}
	up, err := g.Get([]string{oidSysUpTime})
	if err != nil {
		return fail("sysUpTime", err)
	}
	if len(up.Variables) != 1 || up.Variables[0].Type != gosnmp.TimeTicks {
		return fail("sysUpTime", fmt.Errorf("the agent answered %v", up.Variables))
	}
	c := Counters{At: time.Now(), Uptime: uint32(gosnmp.ToBigInt(up.Variables[0].Value).Uint64()), Ifaces: map[string]IfaceCounters{}}
	walk := func(oid string) (map[string]gosnmp.SnmpPDU, error) {
		pdus, err := g.BulkWalkAll(oid)
		if err != nil {
			return nil, err
		}
		out := map[string]gosnmp.SnmpPDU{}
		for _, p := range pdus {
			out[p.Name[strings.LastIndexByte(p.Name, '.')+1:]] = p
		}
		return out, nil
	}
	names, err := walk(oidIfName)
	if err != nil {
		return fail("ifName", err)
	}
	in, err := walk(oidIfHCInOctets)
	if err != nil {
		return fail("ifHCInOctets", err)
	}
	bits, speedOID := 64, oidIfHighSpeed
	outOID := oidIfHCOutOctets
	if len(in) == 0 {
		// An agent without 64-bit counters: 32-bit ones wrap within
		// 35 s at 1 Gbit/s, so poll such a device often.
		bits, speedOID, outOID = 32, oidIfSpeed, oidIfOutOctets
		if in, err = walk(oidIfInOctets); err != nil {
			return fail("ifInOctets", err)
		}
	}
	out, err := walk(outOID)
	if err != nil {
		return fail("output octets", err)
	}
	speeds, err := walk(speedOID)
	if err != nil {
		return fail("interface speeds", err)
	}
	for idx, n := range names {
		name := string(bytesOf(n.Value))
		if len(t.Interfaces) > 0 && !slices.Contains(t.Interfaces, name) {
			continue
		}
		i, iok := in[idx]
		o, ook := out[idx]
		if !iok || !ook {
			continue
		}
		ic := IfaceCounters{In: toUint(i.Value), Out: toUint(o.Value), Bits: bits}
		if s, ok := speeds[idx]; ok {
			ic.Speed = float64(toUint(s.Value))
			if bits == 64 {
				ic.Speed *= 1e6
			}
		}
		c.Ifaces[name] = ic
	}
	if len(t.Interfaces) > 0 && len(c.Ifaces) == 0 {
		return fail("interfaces", fmt.Errorf("none of %s is on the device", strings.Join(t.Interfaces, ", ")))
	}
	return c, nil
}

func bytesOf(v any) []byte {
	if b, ok := v.([]byte); ok {
		return b
	}
	return []byte(fmt.Sprint(v))
}

func toUint(v any) uint64 {
	if b := gosnmp.ToBigInt(v); b != nil && b.Sign() >= 0 && b.Cmp(new(big.Int).SetUint64(^uint64(0))) <= 0 {
		return b.Uint64()
	}
	return 0
}

// snmpPoller polls the configured devices and keeps their latest rates.
type snmpPoller struct {
	mu     sync.Mutex
	ifaces map[[2]string]core.IfaceState
	errs   map[string]string
}

// ifacePoints are a device's interfaces' rates as archive points of test
// ("snmp" or "agent").
func ifacePoints(test, device string, at time.Time, rates map[string]Rate) []core.Point {
	var out []core.Point
	for name, r := range rates {
		p := func(metric core.Name, v float64) core.Point {
			return core.Point{T: at, Src: device, Dst: name, Test: test, Metric: string(metric), Value: v}
		}
		out = append(out, p(core.IfaceIn, r.In), p(core.IfaceOut, r.Out))
		if r.Speed > 0 {
			out = append(out, p(core.IfaceSpeed, r.Speed))
		}
	}
	return out
}

// pollLoop polls one device every t.Every until ctx ends.
func (r *Runners) pollLoop(ctx context.Context, t core.SNMPTarget) {
	var prev Counters
	for {
		cur, err := Poll(t)
		r.snmp.mu.Lock()
		was := r.snmp.errs[t.Name]
		if err != nil {
			r.snmp.errs[t.Name] = err.Error()
			// A device that went away has no current rates, never stale ones.
			for k := range r.snmp.ifaces {
				if k[0] == t.Name {
					delete(r.snmp.ifaces, k)
				}
			}
		} else {
			delete(r.snmp.errs, t.Name)
		}
		r.snmp.mu.Unlock()
		switch {
		case err != nil && was == "":
			r.opts.Service.Logf("%v (retrying every %s)", err, t.Every)
		case err == nil && was != "":
			r.opts.Service.Logf("SNMP %s answers again", t.Name)
		}
		if err == nil {
			if rates, ok := Rates(prev, cur); ok && !prev.At.IsZero() {
				r.snmp.set("snmp", t.Name, cur.At, rates)
				r.opts.Store.AppendPoints(cur.At, ifacePoints("snmp", t.Name, cur.At, rates))
			} else if !prev.At.IsZero() && cur.Uptime < prev.Uptime {
				r.opts.Service.Logf("SNMP %s rebooted (uptime went from %d to %d): rates resume at the next poll", t.Name, prev.Uptime/100, cur.Uptime/100)
			}
			prev = cur
		}
		if !Sleep(ctx, t.Every) {
			return
		}
	}
}

// set keeps the rates of a device's interfaces read at at.
func (p *snmpPoller) set(source, device string, at time.Time, rates map[string]Rate) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, r := range rates {
		p.ifaces[[2]string{device, name}] = core.IfaceState{Source: source, Device: device, Interface: name, At: at, InBPS: r.In, OutBPS: r.Out, SpeedBPS: r.Speed}
	}
}

// Interfaces lists the monitored interfaces' latest rates and the devices
// that do not answer.
func (r *Runners) Interfaces() ([]core.IfaceState, map[string]string) {
	r.snmp.mu.Lock()
	defer r.snmp.mu.Unlock()
	var out []core.IfaceState
	for _, st := range r.snmp.ifaces {
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b core.IfaceState) int {
		return strings.Compare(a.Device+"\x00"+a.Interface, b.Device+"\x00"+b.Interface)
	})
	errs := map[string]string{}
	for k, v := range r.snmp.errs {
		errs[k] = v
	}
	return out, errs
}
