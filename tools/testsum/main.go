// Command testsum reads `go test -json` on standard input and prints what a
// person needs of it: a line per package as go test prints them, the output
// of each failed test, and (with -record) keeps the events so that
// `testsum -summary FILE` can end `make test` with one line of counts and
// every skip grouped by its reason. It exits 1 when a test or package failed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
)

// event is one line of `go test -json` (test2json).
type event struct {
	Action     string  `json:"Action"`
	Package    string  `json:"Package"`
	ImportPath string  `json:"ImportPath"` // build events
	Test       string  `json:"Test"`
	Output     string  `json:"Output"`
	Elapsed    float64 `json:"Elapsed"`
}

func main() {
	record := flag.String("record", "", "append every event to this file, for -summary")
	summary := flag.String("summary", "", "print the counts and skip reasons of the events recorded in this file")
	flag.Parse()
	if *summary != "" {
		os.Exit(summarise(*summary, os.Stdout))
	}
	var rec io.Writer = io.Discard
	if *record != "" {
		f, err := os.OpenFile(*record, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsum:", err)
			os.Exit(2)
		}
		defer f.Close()
		rec = f
	}
	os.Exit(stream(os.Stdin, os.Stdout, rec))
}

// tally follows the tests of a stream of events.
type tally struct {
	output  map[string][]string // per package/test, while it runs
	passed  int
	failed  []string
	skipped map[string][]string // reason -> tests
	badPkg  bool
}

func newTally() *tally {
	return &tally{output: map[string][]string{}, skipped: map[string][]string{}}
}

// add takes one event and returns what to print now.
func (t *tally) add(e event) string {
	key := e.Package + " " + e.Test
	switch e.Action {
	case "output":
		t.output[key] = append(t.output[key], e.Output)
		if e.Test == "" && !isNoise(e.Output) {
			return e.Output // package-level: fuzzing, TestMain, the ok/FAIL line
		}
	case "build-output":
		return e.Output
	case "build-fail":
		t.badPkg = true
	case "pass":
		if e.Test != "" {
			t.passed++
		}
		delete(t.output, key)
	case "skip":
		if e.Test != "" {
			reason := skipReason(t.output[key])
			t.skipped[reason] = append(t.skipped[reason], e.Package+"."+e.Test)
		}
		delete(t.output, key)
	case "fail":
		out := ""
		if e.Test != "" {
			t.failed = append(t.failed, e.Package+"."+e.Test)
			out = strings.Join(t.output[key], "")
		} else {
			t.badPkg = true
		}
		delete(t.output, key)
		return out
	}
	return ""
}

// isNoise is verbose output that go test without -v does not print.
func isNoise(line string) bool {
	return strings.HasPrefix(line, "=== ") || strings.HasPrefix(line, "PASS\n") || line == "PASS\n"
}

var location = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// skipReason is the message a test skipped with: its last line of output
// before "--- SKIP", without the file:line prefix.
func skipReason(lines []string) string {
	for _, l := range slices.Backward(lines) {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "--- SKIP") || strings.HasPrefix(l, "=== ") {
			continue
		}
		return location.ReplaceAllString(l, "")
	}
	return "(no reason given)"
}

func stream(in io.Reader, out, rec io.Writer) int {
	t := newTally()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	events := 0
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			fmt.Fprintln(out, string(line)) // go test's own messages
			continue
		}
		events++
		fmt.Fprintf(rec, "%s\n", line)
		fmt.Fprint(out, t.add(e))
	}
	if events == 0 {
		// go test failed before it ran anything (bad flags, no packages).
		fmt.Fprintln(out, "testsum: go test reported no events")
		fmt.Fprintf(rec, "%s\n", `{"Action":"fail","Package":"(go test)"}`)
		return 1
	}
	if len(t.failed) > 0 || t.badPkg {
		return 1
	}
	return 0
}

func summarise(path string, out io.Writer) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		return 2
	}
	defer f.Close()
	t := newTally()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			t.add(e)
		}
	}
	nSkipped := 0
	for _, tests := range t.skipped {
		nSkipped += len(tests)
	}
	fmt.Fprintf(out, "tests: %d passed, %d failed, %d skipped\n", t.passed, len(t.failed), nSkipped)
	reasons := make([]string, 0, len(t.skipped))
	for r := range t.skipped {
		reasons = append(reasons, r)
	}
	slices.SortFunc(reasons, func(a, b string) int { return len(t.skipped[b]) - len(t.skipped[a]) })
	for _, r := range reasons {
		tests := t.skipped[r]
		fmt.Fprintf(out, "  skipped %d: %s (%s)\n", len(tests), r, shortList(tests))
	}
	for _, f := range t.failed {
		fmt.Fprintf(out, "  FAILED: %s\n", f)
	}
	if len(t.failed) > 0 || t.badPkg {
		return 1
	}
	return 0
}

// shortList names up to three tests, then how many more.
func shortList(tests []string) string {
	names := make([]string, 0, 3)
	for _, t := range tests[:min(3, len(tests))] {
		names = append(names, t[strings.LastIndex(t, "/")+1:])
	}
	s := strings.Join(names, ", ")
	if len(tests) > 3 {
		s += fmt.Sprintf(", and %d more", len(tests)-3)
	}
	return s
}
