// Package measure is the controller side of wanlab's measurements, what
// every kind of them shares: an Endpoint per host (its agent's client and
// test address), the agents' errors in their hosts' names, a test's mark
// (AsTest) and the roles a workload runs in agents. The measurements of a
// workload kind (a throughput test, a transfer, probes) are in the kind's
// own package under internal/workload, which imports this one; those with
// no kind of their own (bandwidth trains, watch, disk) are here.
package measure
