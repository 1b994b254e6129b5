package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
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
	files, err := filepath.Glob("../archive/*.go")
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]int{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil {
				methods[receiverType(fn.Recv.List[0].Type)]++
			}
		}
		if filepath.Base(path) == "db.go" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
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
	if len(methods) == 0 {
		t.Fatal("found no methods in ../archive")
	}
	for typ, n := range methods {
		if n > 25 {
			t.Errorf("archive.%s has %d methods: at most 25 (split it by the tables it keeps)", typ, n)
		}
	}
}

// receiverType is the name of a method's receiver type.
func receiverType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverType(e.X)
	case *ast.IndexExpr:
		return receiverType(e.X)
	case *ast.Ident:
		return e.Name
	}
	return "?"
}
