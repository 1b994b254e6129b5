// Package core is the monitoring service's pure part: its configuration,
// the schedule of throughput-class tests and its dry run, the baselines
// and alert rules, and the names of the metrics it keeps. It measures
// nothing, reads no file and serves nothing: the service (package monitor)
// runs the tests and serves HTTP around it.
package core
