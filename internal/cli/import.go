package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

func newImportCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "import",
		Short: "Bring measurements taken with other tools into the archive",
	}
	c.AddCommand(newImportIperf3Cmd())
	return c
}

func newImportIperf3Cmd() *cobra.Command {
	var db string
	var asJSON bool
	c := &cobra.Command{
		Use:   "iperf3 FILE.json",
		Short: "Store an iperf3 -J result as a run, for wanlab analyze and wanlab report",
		Long: `Store the JSON that iperf3 -J writes (on a real network, or anywhere) as a run of the
archive: every interval's throughput per stream and in sum, retransmits, TCP round trip
and congestion window (TCP), loss and jitter (UDP), as wanlab's own measurements are
stored (docs/archive.md), so that wanlab runs, export, analyze and report work on it.
It prints the new run's number.`,
		Example: "  iperf3 -c server -P 4 -t 30 -J > cern-slac.json\n  wanlab import iperf3 cern-slac.json\n  wanlab report 5",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			data, err := os.ReadFile(a[0])
			if err != nil {
				return fmt.Errorf("reading %s: %w", a[0], err)
			}
			r, start, err := throughput.FromIperf3(data)
			if err != nil {
				return fmt.Errorf("%s: %w", a[0], err)
			}
			ar, err := archive.Open(db)
			if err != nil {
				return err
			}
			defer ar.Close()
			id, err := storeImport(ar, a[0], r, start)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(c.OutOrStdout(), map[string]any{"run": id, "from": r.Start.From, "to": r.Start.To, "bits_per_second": r.End.SumReceived.BitsPerSecond})
			}
			fmt.Fprintf(c.OutOrStdout(), "run %d: iperf3 %s %s -> %s, %s, %.2f Mbit/s received; see wanlab report %d\n",
				id, r.Start.Protocol, r.Start.From, r.Start.To, count(r.Start.Streams, "stream"), r.End.SumReceived.BitsPerSecond/1e6, id)
			return nil
		},
	}
	c.Flags().StringVar(&db, "db", defaultDB, "the archive: a SQLite file or a postgres:// URL")
	c.Flags().BoolVar(&asJSON, "json", false, "print the new run as JSON")
	return c
}

// storeImport stores an imported test as a run of one step.
func storeImport(ar *archive.Archive, file string, r *throughput.Result, start time.Time) (int64, error) {
	params := analysis.ImportParams{File: file, From: r.Start.From, To: r.Start.To, Protocol: r.Start.Protocol, Streams: r.Start.Streams}
	id, err := ar.StartRun(archive.NewRun{Kind: analysis.ImportIperf3, Name: r.Start.From + "->" + r.Start.To, Version: Version, Params: params})
	if err != nil {
		return 0, err
	}
	step, err := ar.StartStep(id, 0, "iperf3", "", nil)
	if err != nil {
		return id, err
	}
	metrics := map[string]float64{"throughput_mbps": r.End.SumReceived.BitsPerSecond / 1e6, "streams": float64(r.Start.Streams),
		"sender_cpu_pct": r.End.CPU.SenderHost, "receiver_cpu_pct": r.End.CPU.ReceiverHost}
	if rt := r.End.SumSent.Retransmits; rt != nil {
		metrics["retransmits"] = float64(*rt)
	}
	if r.Start.Protocol == "udp" {
		metrics["lost_percent"], metrics["jitter_ms"] = r.End.SumReceived.LostPercent, r.End.SumReceived.JitterMS
	}
	status, reason := archive.StatusDone, ""
	if r.Partial {
		status, reason = archive.StatusPartial, r.Error
	}
	if err := ar.AddSamples(id, step, r.Samples(start)); err != nil {
		return id, err
	}
	if err := ar.EndStep(step, status, reason, map[string]any{"metrics": metrics, "kind": "throughput"}); err != nil {
		return id, err
	}
	return id, ar.EndRun(id, status, reason, r)
}
