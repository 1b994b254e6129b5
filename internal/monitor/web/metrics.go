package web

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wanlab/wanlab/internal/monitor/core"
)

// collector exposes a snapshot of the service on each scrape: a path's
// series exist only while its values are fresh, so a path with no data is
// absent (and wanlab_path_up is 0), never a stale value. A path's series
// say its address family (label family: its run's, where its test runs
// once per family, else its latest result's; "" unknown).
type collector struct {
	s      State
	series map[string]*prometheus.Desc

	up, alert, tests, late, running, queued, connected, lag, buffered, dropped, hostDown *prometheus.Desc
	ifRate, ifUse, ifSpeed, snmpUp                                                       *prometheus.Desc
	incident, confidence                                                                 *prometheus.Desc
}

func newCollector(s State) *collector {
	c := &collector{s: s, series: map[string]*prometheus.Desc{}}
	for _, m := range core.Metrics {
		if _, ok := c.series[m.Series]; ok {
			continue
		}
		labels := []string{"src", "dst", "test", "family", "nmwg"}
		for _, l := range m.Labels {
			labels = append(labels, l[0])
		}
		c.series[m.Series] = prometheus.NewDesc(m.Series, m.Help, labels, nil)
	}
	d := prometheus.NewDesc
	c.up = d(core.SeriesPathUp, "1 while the path's test gives fresh results, 0 when it has no data", []string{"src", "dst", "test", "family", "type"}, nil)
	c.alert = d(core.SeriesAlertActive, "1 for each active alert; scope, of a test run once per family: ipv4-only, ipv6-only (the other family's run is healthy) or path (it alerts too)",
		[]string{"src", "dst", "test", "family", "rule", "scope"}, nil)
	c.tests = d(core.SeriesTests, "Tests run, by type and outcome", []string{"type", "status"}, nil)
	c.late = d(core.SeriesTestsLate, "Throughput-class tests that started later than their slip allows", nil, nil)
	c.running = d(core.SeriesTestsRunning, "Throughput-class tests running now", nil, nil)
	c.queued = d(core.SeriesQueueDepth, "Throughput-class tests due and waiting for their hosts", nil, nil)
	c.connected = d(core.SeriesArchiveUp, "1 while results go straight to the archive", nil, nil)
	c.lag = d(core.SeriesArchiveLag, "Age of the oldest result waiting in the local buffer", nil, nil)
	c.buffered = d(core.SeriesBufferBytes, "Bytes of results waiting in the local buffer", nil, nil)
	c.dropped = d(core.SeriesBufferDropped, "Results lost because the local buffer was full", nil, nil)
	c.hostDown = d(core.SeriesHostDown, "1 for each host whose agent does not answer", []string{"host"}, nil)
	c.ifRate = d(core.SeriesIfaceRate, "Traffic of a monitored interface between the last two SNMP polls", []string{"device", "interface", "direction", "source"}, nil)
	c.ifUse = d(core.SeriesIfaceUse, "Share of the interface's speed in use", []string{"device", "interface", "direction", "source"}, nil)
	c.ifSpeed = d(core.SeriesIfaceSpeed, "The interface's speed (ifHighSpeed, or the host's kernel)", []string{"device", "interface", "source"}, nil)
	c.snmpUp = d(core.SeriesSNMPUp, "1 while an SNMP device answers", []string{"device"}, nil)
	c.incident = d(core.SeriesIncidentActive, "1 for each open incident: the link directions at fault (segment) and the figures that show it", []string{"segment", "figures"}, nil)
	c.confidence = d(core.SeriesIncidentConfidence, "An open incident's confidence, 0 to 1: 1 when its segment is the only exact explanation", []string{"segment"}, nil)
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.series {
		ch <- d
	}
	for _, d := range []*prometheus.Desc{c.up, c.alert, c.tests, c.late, c.running, c.queued, c.connected, c.lag, c.buffered, c.dropped, c.hostDown, c.ifRate, c.ifUse, c.ifSpeed, c.snmpUp, c.incident, c.confidence} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	snap := c.s.Snapshot()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, p := range snap.Paths {
		if p.State == core.Elsewhere {
			continue // another process exposes it
		}
		up := 0.0
		if p.Values != nil {
			up = 1
		}
		gauge(c.up, up, p.Src, p.Dst, p.Test, p.Family, p.Type)
		for name, v := range p.Values {
			m, ok := core.PathMetric(name)
			if !ok {
				continue
			}
			labels := []string{p.Src, p.Dst, p.Test, p.Family, m.NMWG}
			for _, l := range m.Labels {
				labels = append(labels, l[1])
			}
			gauge(c.series[m.Series], v, labels...)
		}
	}
	for _, a := range snap.Alerts {
		gauge(c.alert, 1, a.Src, a.Dst, a.Test, a.Family, a.Rule, a.Scope)
	}
	for k, n := range snap.Tests {
		typ, status, _ := strings.Cut(k, " ")
		ch <- prometheus.MustNewConstMetric(c.tests, prometheus.CounterValue, float64(n), typ, status)
	}
	ch <- prometheus.MustNewConstMetric(c.late, prometheus.CounterValue, float64(snap.Late))
	gauge(c.running, float64(snap.Running))
	gauge(c.queued, float64(snap.Queued))
	connected := 0.0
	if snap.Archive.Connected {
		connected = 1
	}
	gauge(c.connected, connected)
	gauge(c.lag, snap.Archive.LagSeconds)
	gauge(c.buffered, float64(snap.Archive.BufferedBytes))
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(snap.Archive.Dropped))
	for h := range snap.Down {
		gauge(c.hostDown, 1, h)
	}
	ifaces, errs := c.s.Interfaces()
	answering := map[string]bool{}
	for _, i := range ifaces {
		if i.Source == "snmp" {
			answering[i.Device] = true
		}
		gauge(c.ifRate, i.InBPS, i.Device, i.Interface, "in", i.Source)
		gauge(c.ifRate, i.OutBPS, i.Device, i.Interface, "out", i.Source)
		if i.SpeedBPS > 0 {
			gauge(c.ifSpeed, i.SpeedBPS, i.Device, i.Interface, i.Source)
			gauge(c.ifUse, i.InUse(), i.Device, i.Interface, "in", i.Source)
			gauge(c.ifUse, i.OutUse(), i.Device, i.Interface, "out", i.Source)
		}
	}
	for d := range answering {
		gauge(c.snmpUp, 1, d)
	}
	for d := range errs {
		gauge(c.snmpUp, 0, d)
	}
	for _, i := range c.s.Incidents() {
		gauge(c.incident, 1, i.Key, strings.Join(i.Figures, ","))
		gauge(c.confidence, i.Confidence, i.Key)
	}
}
