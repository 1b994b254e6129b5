// Package monitor is wanlab's monitoring service: a scheduler that runs a
// mesh of regular tests (probes, throughput, disk-to-disk transfers)
// among the hosts of an emulated test-bed or of real agents, archives
// every result as soon as it lands (buffering to local disk while the
// archive is away), learns each path's baseline, raises alerts when a path
// leaves it, polls routers' interface counters over SNMP, and exposes it
// all on /metrics and /api/v1. It is one more controller: it measures
// through package measure, as the CLI's verbs do.
//
// It comes in three layers. The pure part, its configuration, schedule,
// baselines and alerts, the names of its metrics and the state it shows,
// is package monitor/core. The runners (monitor/runner) measure and hand
// what they find to the Service through small interfaces, with the store
// injected. The HTTP layer (monitor/web) reads and acts on the Service
// through interfaces of its own. This package is the composition root:
// the Service's state (paths, detector, events), its Store (the archive
// and the local buffer; the core's points and alerts become the archive's
// rows here), the shares of a mesh that several processes split, and the
// configuration's loading.
package monitor
