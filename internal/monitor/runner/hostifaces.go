package runner

import (
	"context"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/endpoints"
)

// hostCounters reads a host's interface counters through its agent.
func hostCounters(ctx context.Context, ep measure.Endpoint) (Counters, error) {
	r, err := ep.Agent.Interfaces(ctx, &agentpb.InterfacesRequest{})
	if err != nil {
		return Counters{}, measure.AgentError(ep.Host, err)
	}
	c := Counters{At: time.Unix(0, r.AtUnixNs), Ifaces: map[string]IfaceCounters{}}
	for _, i := range r.Interfaces {
		c.Ifaces[i.Name] = IfaceCounters{In: i.RxBytes, Out: i.TxBytes, Bits: 64, Speed: float64(i.SpeedBps)}
	}
	return c, nil
}

// hostRates are the rates between two readings of a host's interfaces;
// an interface whose counters went down was made anew, and has none.
func hostRates(prev, cur Counters) map[string]Rate {
	out := map[string]Rate{}
	dt := cur.At.Sub(prev.At).Seconds()
	if dt <= 0 {
		return out
	}
	for name, c := range cur.Ifaces {
		if p, ok := prev.Ifaces[name]; ok && c.In >= p.In && c.Out >= p.Out {
			out[name] = Rate{In: 8 * float64(c.In-p.In) / dt, Out: 8 * float64(c.Out-p.Out) / dt, Speed: c.Speed}
		}
	}
	return out
}

// hostPollLoop reads every monitored host's interfaces through its agent
// every interval: utilisation series of the hosts' own interfaces. Each
// host is read by the process that measures the share of (host, host).
func (r *Runners) hostPollLoop(ctx context.Context, every time.Duration) {
	prev := map[string]Counters{}
	for Sleep(ctx, every) {
		r.mu.Lock()
		hosts := r.cfg.Hosts()
		r.mu.Unlock()
		for _, h := range hosts {
			if _, ok := r.turn(h, h, 0); !ok {
				delete(prev, h)
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			eps, err := endpoints.Dial(cctx, r.opts.Bed, h)
			var cur Counters
			if err == nil {
				cur, err = hostCounters(cctx, eps[h])
				measure.CloseAll(eps)
			}
			cancel()
			if err != nil {
				delete(prev, h)
				r.snmp.mu.Lock()
				for k, st := range r.snmp.ifaces {
					if st.Source == "agent" && k[0] == h {
						delete(r.snmp.ifaces, k)
					}
				}
				r.snmp.mu.Unlock()
				continue
			}
			if p, ok := prev[h]; ok {
				rates := hostRates(p, cur)
				r.snmp.set("agent", h, cur.At, rates)
				r.opts.Store.AppendPoints(cur.At, ifacePoints("agent", h, cur.At, rates))
			}
			prev[h] = cur
		}
	}
}

// InterfaceLoad is what each end host's interfaces carried during a test.
type InterfaceLoad map[string]map[string]Rate

// loadDuring reads both ends' counters before a test, and returns a
// function that reads them after it and gives the load in between (the
// hosts whose agents could not tell are left out).
func loadDuring(ctx context.Context, eps ...measure.Endpoint) func() InterfaceLoad {
	before := map[string]Counters{}
	for _, ep := range eps {
		if c, err := hostCounters(ctx, ep); err == nil {
			before[ep.Host] = c
		}
	}
	return func() InterfaceLoad {
		out := InterfaceLoad{}
		for _, ep := range eps {
			b, ok := before[ep.Host]
			if !ok {
				continue
			}
			if c, err := hostCounters(ctx, ep); err == nil {
				out[ep.Host] = hostRates(b, c)
			}
		}
		return out
	}
}
