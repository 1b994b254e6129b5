package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const events = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:12: needs the Debian package iperf3 (make deps installs it)\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: needs the Debian package iperf3 (make deps installs it)\n"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"run","Package":"p","Test":"TestC"}
{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:9: boom\n"}
{"Action":"output","Package":"p","Test":"TestC","Output":"--- FAIL: TestC (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestC"}
{"Action":"run","Package":"p","Test":"TestD"}
{"Action":"output","Package":"p","Test":"TestD","Output":"secret verbose output\n"}
{"Action":"pass","Package":"p","Test":"TestD"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.1s\n"}
{"Action":"fail","Package":"p"}
`

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
