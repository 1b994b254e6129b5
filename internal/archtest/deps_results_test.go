package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

func init() {
	never = append(never, struct{ from, to, why string }{"internal/results", "...",
		"results is the vocabulary of what is measured: those who write the archive and those who read it import it"})
}

// byString are the helpers of results that name a step's figure by
// string, for the controller; readers read a results.Figure instead.
var byString = map[string]bool{"Leg": true, "Phase": true, "Role": true, "JobsEnded": true, "RoleCPU": true, "Lookup": true}

// TestFiguresReadByFigure: the analysis, the report and the run summary
// read a step's figures through results.Figure (Metrics.Get, Value, First,
// Figures; a Column's Value): none builds a figure's name from strings,
// takes one apart, or indexes Metrics by a name. results.Figure's String
// and ParseFigure are the one encoder and decoder.
func TestFiguresReadByFigure(t *testing.T) {
	fset := token.NewFileSet()
	files := parseSources(t, fset, "../analysis/*.go", "../report/*.go", "../cli/run.go")
	for _, f := range files {
		ast.Inspect(f.File, func(n ast.Node) bool {
			if why := byName(n); why != "" {
				t.Errorf("%s: %s: read it as a results.Figure", fset.Position(n.Pos()), why)
			}
			return true
		})
	}
	if len(files) < 10 {
		t.Fatalf("read %d files of analysis, report and cli/run.go", len(files))
	}
}

// byName says how node n handles a figure by its name, "" if it does not.
func byName(n ast.Node) string {
	switch n := n.(type) {
	case *ast.CallExpr:
		sel, ok := n.Fun.(*ast.SelectorExpr)
		if !ok {
			return ""
		}
		if isPkg(sel.X, "results") && byString[sel.Sel.Name] {
			return "results." + sel.Sel.Name + " names a figure by string"
		}
		if inner, ok := sel.X.(*ast.SelectorExpr); ok && isPkg(inner.X, "results") {
			switch sel.Sel.Name {
			case "Of", "In", "Subjects":
				return "results." + inner.Sel.Name + "." + sel.Sel.Name + " names a figure by string"
			}
		}
		if isPkg(sel.X, "strings") {
			for _, a := range n.Args {
				if mentionsResults(a) {
					return "strings." + sel.Sel.Name + " on a figure's name"
				}
			}
		}
	case *ast.IndexExpr:
		if sel, ok := n.Index.(*ast.SelectorExpr); ok && isPkg(sel.X, "results") {
			return "indexing by results." + sel.Sel.Name
		}
	case *ast.BinaryExpr:
		if n.Op == token.ADD && (isResultsName(n.X) || isResultsName(n.Y)) {
			return "joining a figure's name"
		}
	}
	return ""
}

func isPkg(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// isResultsName is a constant of results, such as results.ThroughputMbps.
func isResultsName(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && isPkg(sel.X, "results")
}

// mentionsResults says whether e refers to anything of results.
func mentionsResults(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && isPkg(sel.X, "results") {
			found = true
		}
		return !found
	})
	return found
}

// TestFigureRuleCatchesABreach checks byName on the reads it exists to stop.
func TestFigureRuleCatchesABreach(t *testing.T) {
	for _, tc := range []struct {
		src    string
		caught bool
	}{
		{`m[results.ThroughputMbps]`, true},
		{`results.Leg(results.There, "mbps")`, true},
		{`results.CPUPct.Of(h)`, true},
		{`strings.HasPrefix(k, results.JobsEnded(""))`, true},
		{`results.Jobs + "_" + status`, true},
		{`results.Lookup(m, "a|b")`, true},
		{`m.Value(results.Named(results.ThroughputMbps))`, false},
		{`m.Get(results.CPUPct.About(h))`, false},
		{`m.First(results.RoleCPUFigures("server")...)`, false},
		{`s.Params["jobs"]`, false},
	} {
		e, err := parser.ParseExpr(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		caught := false
		ast.Inspect(e, func(n ast.Node) bool {
			caught = caught || byName(n) != ""
			return true
		})
		if caught != tc.caught {
			t.Errorf("%s: caught %v, want %v", tc.src, caught, tc.caught)
		}
	}
}
