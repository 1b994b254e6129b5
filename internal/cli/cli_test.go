package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/golden"
)

func TestExitCodes(t *testing.T) {
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--help"}, exitOK, ""},
		{[]string{"testbed", "validate", "../scenario/testdata/two-hosts.good.yaml"}, exitOK, ""},
		{[]string{"testbed", "validate", "../scenario/testdata/unknown-host.bad.yaml"}, exitUsage, `unknown host "c"`},
		{[]string{"testbed", "validate", "no-such-file.yaml"}, exitFailure, "no such file"},
		{[]string{"testbed", "validate"}, exitUsage, "accepts 1 arg"},
		{[]string{"testbed", "validate", "--bogus", "x"}, exitUsage, "unknown flag"},
		{[]string{"nosuchverb"}, exitFailure, "unknown command"},
		{[]string{"testbed", "down", "a", "--all"}, exitUsage, "give one test-bed NAME or --all"},
		{[]string{"testbed", "check", "x.yaml", "--max-pairs", "-1"}, exitUsage, "--max-pairs"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tt.args, &out, &errb)
			if code != tt.code || !strings.Contains(errb.String(), tt.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errb.String(), tt.code, tt.msg)
			}
		})
	}
}

// TestEveryVerbHasHelp checks --help on every command, as the conventions ask.
func TestEveryVerbHasHelp(t *testing.T) {
	root := newRoot()
	for _, c := range append(root.Commands(), root) {
		for _, sub := range append(c.Commands(), c) {
			args := append(strings.Fields(strings.TrimPrefix(sub.CommandPath(), "wanlab")), "--help")
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != exitOK || !strings.Contains(out.String(), "Usage:") {
				t.Errorf("wanlab %v: exit %d, no usage: %q", args, code, out.String()+errb.String())
			}
		}
	}
}

func TestValidateGolden(t *testing.T) {
	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"validate-sites.txt", []string{"testbed", "validate", "../scenario/testdata/sites.good.yaml"}},
		{"validate-sites.json", []string{"testbed", "validate", "--json", "../scenario/testdata/sites.good.yaml"}},
		{"validate-wan-lan.txt", []string{"testbed", "validate", "../../examples/wan-lan.yaml"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(tt.args, &out, &errb); code != exitOK {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			golden.Check(t, "testdata/"+tt.golden, out.String())
		})
	}
}
