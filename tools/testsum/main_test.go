package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// events are a package's test events: a skip twice for one reason, a
// failure, a pass with output that must not show, the package's failure.
var events = strings.Join([]string{
	ev("start", "", ""),
	ev("run", "TestA", ""), ev("output", "TestA", "=== RUN   TestA\n"),
	ev("output", "TestA", "    a_test.go:12: needs the Debian package iperf3 (make deps installs it)\n"),
	ev("output", "TestA", "--- SKIP: TestA (0.00s)\n"), ev("skip", "TestA", ""),
	ev("run", "TestB", ""), ev("output", "TestB", "    b_test.go:3: needs the Debian package iperf3 (make deps installs it)\n"),
	ev("skip", "TestB", ""),
	ev("run", "TestC", ""), ev("output", "TestC", "    c_test.go:9: boom\n"), ev("output", "TestC", "--- FAIL: TestC (0.00s)\n"),
	ev("fail", "TestC", ""),
	ev("run", "TestD", ""), ev("output", "TestD", "secret verbose output\n"), ev("pass", "TestD", ""),
	ev("output", "", "FAIL\tp\t0.1s\n"), ev("fail", "", ""),
}, "\n") + "\n"

// ev is one event of package p as go test -json writes it.
func ev(action, test, output string) string {
	b, _ := json.Marshal(event{Action: action, Package: "p", Test: test, Output: output})
	return string(b)
}

func TestStreamAndSummary(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "events.jsonl")
	f, err := os.Create(rec)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	code := stream(strings.NewReader(events), &out, f)
	f.Close()
	if code != 1 {
		t.Errorf("exit %d for a failed test, want 1", code)
	}
	got := out.String()
	if !strings.Contains(got, "boom") || !strings.Contains(got, "FAIL\tp") {
		t.Errorf("the failed test's output and the package line should be printed:\n%s", got)
	}
	if strings.Contains(got, "secret verbose output") || strings.Contains(got, "needs the Debian") {
		t.Errorf("passed and skipped tests' output should not be printed:\n%s", got)
	}
	var sum strings.Builder
	if code := summarise(rec, &sum); code != 1 {
		t.Errorf("summary exit %d, want 1", code)
	}
	want := "tests: 1 passed, 1 failed, 2 skipped\n" +
		"  skipped 2: needs the Debian package iperf3 (make deps installs it) (p.TestA, p.TestB)\n" +
		"  FAILED: p.TestC\n"
	if sum.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", sum.String(), want)
	}
}
