package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestFuzzTargetsExist checks that every target of the Makefile's fuzz
// pass names a fuzz function of its package: a target left behind when a
// fuzz test moves makes `go test -fuzz` warn and fuzz nothing, which
// would pass unseen.
func TestFuzzTargetsExist(t *testing.T) {
	root := filepath.Join("..", "..")
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := fuzzTargets(string(mk))
	if len(targets) == 0 {
		t.Fatal("Makefile: no FUZZ_TARGETS found")
	}
	for _, tg := range targets {
		pkg, name, ok := strings.Cut(tg, ":")
		if !ok {
			t.Errorf("fuzz target %q: want PKG:FuzzName", tg)
			continue
		}
		name, _, _ = strings.Cut(name, ":")
		if !fuzzDeclared(t, filepath.Join(root, pkg), name) {
			t.Errorf("fuzz target %s: package %s declares no func %s(f *testing.F)", tg, pkg, name)
		}
	}
}

// fuzzTargets reads the FUZZ_TARGETS variable, with its continuation lines.
func fuzzTargets(makefile string) []string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(makefile, "\n") {
		if !in {
			rest, ok := strings.CutPrefix(line, "FUZZ_TARGETS :=")
			if !ok {
				continue
			}
			in, line = true, rest
		}
		more := strings.HasSuffix(strings.TrimSpace(line), "\\")
		b.WriteString(strings.TrimSuffix(strings.TrimSpace(line), "\\"))
		b.WriteByte(' ')
		if !more {
			break
		}
	}
	return strings.Fields(b.String())
}

func fuzzDeclared(t *testing.T, dir, name string) bool {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(name) + `\(\w+ \*testing\.F\)`)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if decl.Match(src) {
			return true
		}
	}
	return false
}
