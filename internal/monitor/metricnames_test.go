package monitor

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/monitor/core"
)

// No Go code of the service or the dashboard spells a registered name: it
// says core.RTTMin, not "rtt_min_seconds" (struct tags, the API's JSON
// field names, aside).
func TestNoMetricNameLiterals(t *testing.T) {
	names := map[string]bool{}
	for _, m := range slices.Concat(core.Metrics, core.Interface) {
		names[string(m.Name)] = true
	}
	for _, s := range core.Series() {
		names[s] = true
	}
	var files []string
	for _, pattern := range []string{"*.go", "*/*.go", "../dashboard/*.go"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == filepath.Join("core", "metric.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if _, ok := n.(*ast.Field); ok {
				return false // a struct tag is a literal too: the API's JSON names
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if v, err := strconv.Unquote(lit.Value); err == nil && names[v] {
				t.Errorf("%s: %s spells a registered name: use core's constant", fset.Position(lit.Pos()), lit.Value)
			}
			return true
		})
	}
}
