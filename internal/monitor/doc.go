// Package monitor is wanlab's monitoring service: a scheduler that runs a
// mesh of regular tests (probes, throughput, disk-to-disk transfers)
// among the hosts of an emulated test-bed or of real agents, archives
// every result as soon as it lands (buffering to local disk while the
// archive is away), learns each path's baseline, raises alerts when a path
// leaves it, polls routers' interface counters over SNMP, and exposes it
// all on /metrics and /api/v1. It is one more controller: it measures
// through package measure, as the CLI's verbs do.
//
// The pure part, its configuration, schedule, baselines and alerts and the
// names of its metrics, is package monitor/core; this package runs the
// tests (runners.go) and serves HTTP around it.
package monitor
