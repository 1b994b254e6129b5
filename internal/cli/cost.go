package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/cost"
	"github.com/wanlab/wanlab/internal/monitor/web"
	"github.com/wanlab/wanlab/internal/units"
)

func newCostCmd() *cobra.Command {
	var server, mode string
	var asJSON bool
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "cost --server URL SRC[,SRC...] DST SIZE",
		Short: "Predict how long moving SIZE bytes from SRC to DST takes, from what monitoring measured",
		Long: `Ask a running wanlab serve for the network cost of a transfer: the predicted time
with an interval, the streams and TCP window that achieve it, what the prediction rests
on (the path's throughput tests or transfers, its probes through a TCP model, the end
hosts' disk tests) and how old that is. A file goes from disk to disk unless --mode
memory, and a slow disk shows as the limit, not as a surprise.

With several sources (replicas of one file, comma-separated) it ranks them, fastest
first; a source with no recent measurement is listed apart, with the reason.
The answer comes from GET /api/v1/cost and POST /api/v1/rank (docs/openapi.yaml).`,
		Example: `  wanlab cost --server http://127.0.0.1:9474 cern taipei 10GB
  wanlab cost --server http://127.0.0.1:9474 cern,slac,cnaf taipei 2GB --json`,
		Args: args(cobra.ExactArgs(3)),
		RunE: func(c *cobra.Command, a []string) error {
			size, err := units.ParseSize(a[2])
			if err != nil || size < 1 {
				return usagef("SIZE %q: give a size, as 10GB or 1500000", a[2])
			}
			if mode != "disk" && mode != "memory" {
				return usagef("--mode %q: give disk or memory", mode)
			}
			base, err := url.Parse(server)
			if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
				return usagef("--server %q: give the URL of wanlab serve's listener, as http://127.0.0.1:9474", server)
			}
			ctx, cancel := context.WithTimeout(c.Context(), timeout)
			defer cancel()
			srcs := strings.Split(a[0], ",")
			out := c.OutOrStdout()
			if len(srcs) == 1 {
				q := url.Values{"src": {srcs[0]}, "dst": {a[1]}, "bytes": {fmt.Sprint(int64(size))}, "mode": {mode}}
				var p cost.Prediction
				if err := callAPI(ctx, "GET", base.JoinPath("/api/v1/cost").String()+"?"+q.Encode(), nil, &p); err != nil {
					return err
				}
				if asJSON {
					return writeJSON(out, p)
				}
				printPredictions(out, []cost.Prediction{p}, nil)
				return nil
			}
			body, _ := json.Marshal(web.RankRequest{Dst: a[1], Bytes: int64(size), Sources: srcs, Mode: mode})
			var ans web.RankAnswer
			if err := callAPI(ctx, "POST", base.JoinPath("/api/v1/rank").String(), body, &ans); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out, ans)
			}
			printPredictions(out, ans.Ranking, ans.Refused)
			return nil
		},
	}
	c.Flags().StringVar(&server, "server", "http://"+defaultHTTP, "URL of a running wanlab serve")
	c.Flags().StringVar(&mode, "mode", "disk", "disk (file to file) or memory")
	c.Flags().BoolVar(&asJSON, "json", false, "print the API's answer as JSON")
	c.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "give up on the server after this long")
	return c
}

// callAPI sends a request to wanlab serve and decodes its JSON answer; an
// answer of 400 is a usage error, any other error status a failure, each
// with the server's reason.
func callAPI(ctx context.Context, method, target string, body []byte, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return usagef("%s: %v", target, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("asking wanlab serve: %w (is it running, with --http at that address?)", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("reading wanlab serve's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(data[:min(len(data), 200)]))
		}
		err := fmt.Errorf("wanlab serve answered %s: %s", resp.Status, e.Error)
		if resp.StatusCode == http.StatusBadRequest {
			return usageError{err}
		}
		return err
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("wanlab serve's answer is not what wanlab cost expects: %w", err)
	}
	return nil
}

func printPredictions(w io.Writer, ps []cost.Prediction, refused []cost.Refusal) {
	t := table(w)
	fmt.Fprintln(t, "SRC\tDST\tSIZE\tPREDICTED\tINTERVAL\tRATE\tLIMIT\tSTREAMS\tWINDOW\tCERTAINTY\tAGE")
	for _, p := range ps {
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s-%s\t%s\t%s\t%d\t%s\t%s\t%s\n", p.Src, p.Dst, units.Size(p.Bytes), roundSeconds(p.PredictedSeconds),
			roundSeconds(p.IntervalSeconds[0]), roundSeconds(p.IntervalSeconds[1]), units.Rate(p.RateBitsPerSecond), p.Limit, p.Streams,
			units.Size(p.WindowBytes), p.Certainty, roundSeconds(p.AgeSeconds))
	}
	t.Flush()
	for _, p := range ps {
		for _, b := range p.Basis {
			fmt.Fprintf(w, "  %s->%s rests on %s: %d samples, newest %s\n", p.Src, p.Dst, b.What, b.Samples, b.Newest.Local().Format(time.DateTime))
		}
		for _, c := range p.Caveats {
			fmt.Fprintf(w, "  %s->%s: %s\n", p.Src, p.Dst, c)
		}
	}
	for _, r := range refused {
		fmt.Fprintf(w, "  %s: no prediction: %s\n", r.Src, r.Reason)
	}
}

// roundSeconds shows a time in seconds as people read one.
func roundSeconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond * 100).String()
}
