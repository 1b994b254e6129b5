package archtest

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"testing"
)

func init() {
	for _, to := range []string{"internal/agent/...", "internal/measure", "internal/monitor/...", "internal/controller", "internal/analysis"} {
		never = append(never, struct{ from, to, why string }{"internal/archive", to,
			"the archive stores what it is given: its readers and writers import it, never the other way round"})
	}
}

// TestArchiveShape holds the archive to its shape: rows are iterated in
// db.go alone (queryAll, queryEach), and no type has more than 25 methods.
func TestArchiveShape(t *testing.T) {
	fset := token.NewFileSet()
	files := parseSources(t, fset, "../archive/*.go")
	for _, f := range files {
		if filepath.Base(f.path) == "db.go" {
			continue
		}
		ast.Inspect(f.File, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				switch sel.Sel.Name {
				case "Next", "Query", "QueryContext":
					t.Errorf("%s: %s() outside db.go: read rows through queryAll or queryEach", fset.Position(call.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
	checkMethodCounts(t, "archive", files, "split it by the tables it keeps")
}
