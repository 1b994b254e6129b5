package throughput

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/measure"
)

// iperf3Doc is the part of iperf3's -J output wanlab reads.
type iperf3Doc struct {
	Start *struct {
		Connected []struct {
			LocalHost  string `json:"local_host"`
			RemoteHost string `json:"remote_host"`
		} `json:"connected"`
		Timestamp struct {
			Timesecs int64 `json:"timesecs"`
		} `json:"timestamp"`
		TestStart struct {
			Protocol   string  `json:"protocol"`
			NumStreams int     `json:"num_streams"`
			Duration   float64 `json:"duration"`
			Bytes      int64   `json:"bytes"`
			Reverse    int     `json:"reverse"`
		} `json:"test_start"`
	} `json:"start"`
	Intervals []IntervalResult `json:"intervals"`
	End       *struct {
		SumSent     StreamResult  `json:"sum_sent"`
		SumReceived StreamResult  `json:"sum_received"`
		Sum         *StreamResult `json:"sum"` // UDP: the receiver's loss and jitter
		CPU         struct {
			HostTotal   float64 `json:"host_total"`
			RemoteTotal float64 `json:"remote_total"`
		} `json:"cpu_utilization_percent"`
	} `json:"end"`
	Error string `json:"error"`
}

// ErrNotIperf3 means a file is not iperf3's JSON output.
var ErrNotIperf3 = errors.New("not iperf3 JSON output (iperf3 -J)")

// Iperf3Error is a test that iperf3 itself reports as failed, with nothing
// measured: its JSON output holds an error and no connected hosts.
type Iperf3Error struct {
	Message string // iperf3's own words
}

func (e *Iperf3Error) Error() string { return "iperf3 reported an error: " + e.Message }

// FromIperf3 reads the JSON that iperf3 -J writes into a throughput result,
// and returns when the test started. A test iperf3 reports as failed with
// nothing measured is an *Iperf3Error with iperf3's words; one cut short
// keeps its intervals.
func FromIperf3(data []byte) (*Result, time.Time, error) {
	var doc iperf3Doc
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, time.Time{}, fmt.Errorf("%w: %v", ErrNotIperf3, err)
	}
	// A test that failed before it began (no server, a refused
	// connection) has iperf3's error and sections without hosts.
	if doc.Start == nil || doc.End == nil {
		if doc.Error != "" {
			return nil, time.Time{}, &Iperf3Error{Message: doc.Error}
		}
		return nil, time.Time{}, fmt.Errorf("%w: no start or end section", ErrNotIperf3)
	}
	ts := doc.Start.TestStart
	r := &Result{Intervals: doc.Intervals}
	r.Start.Protocol = strings.ToLower(ts.Protocol)
	r.Start.Streams = ts.NumStreams
	r.Start.Duration = ts.Duration
	r.Start.Bytes = ts.Bytes
	if len(doc.Start.Connected) > 0 {
		c := doc.Start.Connected[0]
		r.Start.From, r.Start.To = c.LocalHost, c.RemoteHost
		if ts.Reverse == 1 {
			r.Start.From, r.Start.To = c.RemoteHost, c.LocalHost
		}
	}
	if r.Start.From == "" || r.Start.Protocol == "" || r.Start.Streams < 1 {
		if doc.Error != "" {
			return nil, time.Time{}, &Iperf3Error{Message: doc.Error}
		}
		return nil, time.Time{}, fmt.Errorf("%w: the start section has no hosts, protocol or streams", ErrNotIperf3)
	}
	r.End.SumSent, r.End.SumReceived = doc.End.SumSent, doc.End.SumReceived
	if s := doc.End.Sum; s != nil && r.Start.Protocol == "udp" {
		// iperf3's UDP loss and jitter are in end.sum, as the receiver saw them.
		r.End.SumReceived.LostPercent, r.End.SumReceived.JitterMS = s.LostPercent, s.JitterMS
		r.End.SumReceived.LostPackets, r.End.SumReceived.Packets = s.LostPackets, s.Packets
	}
	r.End.CPU = measure.CPUResult{SenderHost: doc.End.CPU.HostTotal, ReceiverHost: doc.End.CPU.RemoteTotal, SenderAgent: -1, ReceiverAgent: -1}
	if ts.Reverse == 1 {
		r.End.CPU.SenderHost, r.End.CPU.ReceiverHost = doc.End.CPU.RemoteTotal, doc.End.CPU.HostTotal
	}
	if doc.Error != "" {
		r.Partial, r.Error = true, doc.Error
	}
	return r, time.Unix(doc.Start.Timestamp.Timesecs, 0), nil
}
