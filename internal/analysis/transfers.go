package analysis

// Which host's disk or which path limited each file transfer.

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// transfers answers "which host is the bottleneck" for a workload of file
// transfers: its steps grouped by what limited them, the commonest first.
func transfers(w Workload, ws WorkloadSteps) []Finding {
	groups := map[string][]string{}
	values := map[string]float64{}
	for i, v := range ws.Steps {
		if v.Bottleneck == "" {
			continue
		}
		groups[v.Bottleneck] = append(groups[v.Bottleneck], fmt.Sprintf("%s (%s)", orStep(w.Steps[i]), v.Why))
		values["steps_"+v.Bottleneck]++
		if mbps, ok := throughputOf(w.Steps[i].Metrics); ok {
			values["throughput_mbps."+v.Label] = mbps
		}
	}
	if len(groups) == 0 {
		return nil
	}
	names := slices.SortedFunc(maps.Keys(groups), func(a, b string) int {
		return cmp.Or(len(groups[b])-len(groups[a]), strings.Compare(a, b))
	})
	var parts []string
	for _, b := range names {
		words := bottleneckWords[b]
		parts = append(parts, fmt.Sprintf("%s%s limited %s: %s", strings.ToUpper(words[:1]), words[1:], plural(float64(len(groups[b])), "transfer"), strings.Join(groups[b], "; ")))
	}
	return []Finding{{Kind: "transfers", Workload: w.Name, Bottleneck: names[0], Confidence: "high",
		Text: strings.Join(parts, ". ") + ".", Values: values}}
}
