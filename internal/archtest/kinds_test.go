package archtest

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kinds"
)

// dispatchBaseline is, per package, how many places outside the registry
// choose what to do by a step's workload kind (a switch or an if on a
// kind, a table keyed by kinds, a comparison with one), as dispatchSites
// counts them. At main 77466e7 (issue 32) there were 26: scenario 2,
// controller 2, analysis 13, report 6, dashboard 1, agent 2; scenario's
// and controller's are now their legacy tables. A count may only fall:
// when a kind moves into its package (internal/workload/KIND, one line in
// internal/workload/kinds), lower its packages' counts here.
var dispatchBaseline = map[string]int{
	"internal/scenario":   1, // legacyKinds
	"internal/controller": 1, // legacyRuns
	"internal/analysis":   13,
	"internal/report":     6,
	"internal/dashboard":  1,
	"internal/agent":      2,
}

// TestKindDispatchRatchet counts the places that dispatch on a workload
// kind outside the registry and its kinds (internal/workload/...) and the
// vocabulary that names the kinds (internal/results): no package may have
// more than dispatchBaseline allows.
func TestKindDispatchRatchet(t *testing.T) {
	sites, err := dispatchSites(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range slices.Sorted(maps.Keys(sites)) {
		got, want := len(sites[pkg]), dispatchBaseline[pkg]
		switch {
		case got > want:
			t.Errorf("%s dispatches on a workload kind in %d places, more than the %d allowed: give the kind what it needs in its package (internal/workload/KIND, registered in internal/workload/kinds) instead:\n\t%s",
				pkg, got, want, strings.Join(sites[pkg], "\n\t"))
		case got < want:
			t.Logf("%s dispatches on a workload kind in %d places, fewer than %d: lower dispatchBaseline[%q] to %d", pkg, got, want, pkg, got)
		}
	}
}

// TestDispatchSitesFound checks the counting itself on made-up code, and
// the rules that keep a kind's package off the scenario, the controller
// and the backends.
func TestDispatchSitesFound(t *testing.T) {
	src := `package x
func f(s Step, w Workload, r Request) {
	switch w.Kind {
	case results.EventDB, results.Mesh:
	}
	if s.Config.Transfer != nil && w.Kind == results.Throughput {
	}
	switch r.GetRole() {
	}
	ok := w.Kind != results.Probe
	names := map[results.Kind]string{results.Impact: "impact"}
	step := Step{Throughput: &Throughput{}}
	if s.Throughput.Streams > 1 {
	}
}
`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(fileSites(f, map[string]bool{"EventDB": true, "Mesh": true, "Transfer": true, "Throughput": true, "Probe": true, "Impact": true})); got != 5 {
		t.Errorf("found %d dispatch sites, want 5 (two switches, an if, a comparison, a table)", got)
	}
	for _, to := range []string{"internal/scenario", "internal/controller", "internal/backend"} {
		caught := false
		for _, r := range never {
			caught = caught || match(r.from, "internal/workload/command") && match(r.to, to)
		}
		if !caught {
			t.Errorf("a kind's package may import %s", to)
		}
	}
}

// kindFields are the fields of scenario.Step that say a step's kind by
// being set (s.Config.EventDB != nil).
var kindFields = map[string]bool{"EventDB": true, "TaskFarm": true, "Mesh": true, "Throughput": true, "Transfer": true,
	"Probe": true, "Impact": true, "Command": true}

// dispatchSites lists, by package (a folder of the module under root),
// the file:line of each place that dispatches on a workload kind.
func dispatchSites(root string) (map[string][]string, error) {
	consts := map[string]bool{}
	for _, k := range results.Kinds {
		for name := range kindFields {
			if strings.EqualFold(name, string(k)) {
				consts[name] = true
			}
		}
	}
	sites := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "internal/workload" || rel == "internal/results") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		for _, pos := range fileSites(f, consts) {
			sites[pkg] = append(sites[pkg], fmt.Sprintf("%s:%d", rel, fset.Position(pos).Line))
		}
		return nil
	})
	return sites, err
}

// fileSites finds a file's dispatch sites: a switch whose tag or cases
// name a kind (or an agent role), an if whose condition does, a table
// keyed by kinds, and any other comparison with a kind.
func fileSites(f *ast.File, consts map[string]bool) []token.Pos {
	isKind := func(e ast.Expr) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		x, ok := sel.X.(*ast.Ident)
		return ok && x.Name == "results" && consts[sel.Sel.Name]
	}
	isNil := func(e ast.Expr) bool { id, ok := e.(*ast.Ident); return ok && id.Name == "nil" }
	isKindField := func(e ast.Expr) bool { sel, ok := e.(*ast.SelectorExpr); return ok && kindFields[sel.Sel.Name] }
	// mentions says whether an expression names a kind or tests a kind's field.
	mentions := func(n ast.Node) bool {
		found := false
		ast.Inspect(n, func(n ast.Node) bool {
			switch e := n.(type) {
			case ast.Expr:
				if isKind(e) {
					found = true
				}
				if b, ok := e.(*ast.BinaryExpr); ok && (b.Op == token.EQL || b.Op == token.NEQ) &&
					(isKindField(b.X) && isNil(b.Y) || isNil(b.X) && isKindField(b.Y)) {
					found = true
				}
			}
			return !found
		})
		return found
	}
	var sites []token.Pos
	counted := map[ast.Node]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.SwitchStmt:
			hit := false
			if c, ok := s.Tag.(*ast.CallExpr); ok {
				if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "GetRole" {
					hit = true
				}
			}
			if s.Tag != nil && mentions(s.Tag) {
				hit = true
			}
			for _, st := range s.Body.List {
				for _, e := range st.(*ast.CaseClause).List {
					counted[e] = true
					hit = hit || mentions(e)
				}
			}
			if hit {
				sites = append(sites, s.Pos())
			}
		case *ast.IfStmt:
			counted[s.Cond] = true
			if mentions(s.Cond) {
				sites = append(sites, s.Pos())
			}
		case *ast.CompositeLit:
			if m, ok := s.Type.(*ast.MapType); ok && (isKindType(m.Key)) {
				sites = append(sites, s.Pos())
				return false
			}
		case *ast.BinaryExpr:
			if !counted[s] && (s.Op == token.EQL || s.Op == token.NEQ) && (isKind(s.X) || isKind(s.Y)) {
				sites = append(sites, s.Pos())
			}
		}
		if e, ok := n.(ast.Expr); ok && counted[e] {
			return false
		}
		return true
	})
	return sites
}

// isKindType says whether a type is results.Kind.
func isKindType(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "results" && sel.Sel.Name == "Kind"
}

// toySpec is a step of the toy kind: a host that waits some seconds.
type toySpec struct {
	Host    string
	Seconds int
}

func (s *toySpec) Length() time.Duration          { return time.Duration(s.Seconds) * time.Second }
func (s *toySpec) RoleHosts() map[string][]string { return map[string][]string{"waiter": {s.Host}} }

// toy is a kind as a new kind's package declares it, in a test build.
var toy = kind.Kind{
	Name: "toy",
	Decode: func(decode kind.Decoder, c kind.Check) kind.Spec {
		var r struct {
			Host    string `yaml:"host"`
			Seconds *int   `yaml:"seconds"`
		}
		if !decode(&r) {
			return nil
		}
		c.Host("host", r.Host)
		return &toySpec{Host: r.Host, Seconds: c.Count("seconds", r.Seconds, 1, 1, 60)}
	},
	Run: func(ctx context.Context, env kind.Env, s kind.Spec) (*kind.Outcome, error) {
		return &kind.Outcome{Metrics: results.Metrics{"waited_s": float64(s.(*toySpec).Seconds)}}, nil
	},
}

// TestANewKindIsOnePackageAndOneLine registers a toy kind, as its one line
// in internal/workload/kinds would, and reads a scenario that uses it:
// its settings are decoded, swept and checked with file:line problems, and
// the registry runs it, with nothing else changed.
func TestANewKindIsOnePackageAndOneLine(t *testing.T) {
	defer kinds.Register(toy)()
	const bed = "name: toy\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - {between: [a, b]}\nworkloads:\n"
	f, err := scenario.Parse("toy.yaml", []byte(bed+"  - toy: {host: a}\n    sweep: {seconds: [2, 3]}\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	w := f.Workloads[0]
	if w.Kind != "toy" || len(w.Steps) != 2 {
		t.Fatalf("workload %+v", w)
	}
	s, ok := w.Steps[1].Spec.(*toySpec)
	if !ok || s.Host != "a" || s.Seconds != 3 || w.Steps[1].Length() != 3*time.Second || w.Steps[1].Label() != "seconds=3" {
		t.Errorf("step %+v: spec %+v", w.Steps[1], w.Steps[1].Spec)
	}
	k, ok := kinds.Lookup("toy")
	if !ok {
		t.Fatal("the registry does not know the toy kind")
	}
	if o, err := k.Run(context.Background(), nil, s); err != nil || o.Metrics["waited_s"] != 3 {
		t.Errorf("ran %+v, %v", o, err)
	}

	_, err = scenario.Parse("toy.yaml", []byte(bed+"  - toy: {host: c, seconds: 99, colour: red}\n"), false)
	var perr *scenario.Error
	if !errors.As(err, &perr) {
		t.Fatalf("a wrong toy step: %v", err)
	}
	for _, want := range []string{`toy.yaml:8: workloads[0].toy.host: unknown host "c"`, "workloads[0].toy.seconds: 99 is out of range",
		`unknown toy setting "colour"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\ndoes not say %q", err, want)
		}
	}
	_, err = scenario.Parse("toy.yaml", []byte(bed+"  - tyo: {}\n"), false)
	if err == nil || !strings.Contains(err.Error(), "command, toy") {
		t.Errorf("an unknown kind's message does not list the toy kind: %v", err)
	}
}
