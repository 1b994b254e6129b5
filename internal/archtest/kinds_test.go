package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/workload/kinds"
)

// TestNoKindDispatch: no package outside the kinds (internal/workload/...)
// and the vocabulary that names them (internal/results) chooses what to do
// by a workload kind: a switch or an if on a kind or on one of its agent
// roles, a table keyed by kinds, a comparison with one. Issue 32 took
// their number from 26 (scenario 2, controller 2, analysis 13, report 6,
// dashboard 1, agent 2) to none: what a package needs of a kind, the kind
// gives in its package (its Kind, its Traits, its spec's capabilities).
func TestNoKindDispatch(t *testing.T) {
	root := filepath.Join("..", "..")
	v, err := vocabularyOf(root)
	if err != nil {
		t.Fatal(err)
	}
	sites, err := dispatchSites(root, v)
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range slices.Sorted(maps.Keys(sites)) {
		t.Errorf("%s dispatches on a workload kind in %d places: give the kind what it needs in its package (internal/workload/KIND, registered in internal/workload/kinds) instead:\n\t%s",
			pkg, len(sites[pkg]), strings.Join(sites[pkg], "\n\t"))
	}
}

// TestDispatchSitesFound checks the counting itself on made-up code and
// the vocabulary it counts with, and the rules that keep a kind's package
// off the scenario, the controller and the backends.
func TestDispatchSitesFound(t *testing.T) {
	src := `package x
func f(w Workload, r Request, role string) {
	switch w.Kind {
	case results.EventDB, results.Mesh:
	}
	if s.Ready && w.Kind == results.Throughput {
	}
	switch r.GetRole() {
	case eventdb.RoleServer:
	}
	switch r.GetRole() {
	case agentapi.RoleWatch:
	}
	if role == "mesh-node" || role == "tcp-watch" {
	}
	ok := w.Kind != results.Probe
	names := map[results.Kind]string{results.Impact: "impact"}
	plain := w.Kind == "eventdb-client" || role == agentapi.RoleTrainSender
	byName := w.Kind == "mesh" || w.Name == "other"
}
`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	v := vocabulary{
		kinds:      map[string]bool{"EventDB": true, "Mesh": true, "Throughput": true, "Probe": true, "Impact": true},
		kindNames:  map[string]bool{"eventdb": true, "mesh": true},
		roleNames:  map[string]bool{"eventdb-server": true, "eventdb-client": true, "mesh-node": true},
		roleConsts: map[string]bool{"eventdb.RoleServer": true},
	}
	if got := len(fileSites(f, v)); got != 8 {
		t.Errorf("found %d dispatch sites, want 8 (a switch and an if on kinds, a switch and an if on a kind's roles, three comparisons, a table)", got)
	}

	real, err := vocabularyOf(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"EventDB", "Command", "Impact"} {
		if !real.kinds[want] {
			t.Errorf("the vocabulary does not know results.%s: %+v", want, real.kinds)
		}
	}
	for _, want := range []string{"eventdb.RoleServer", "taskfarm.RoleWorkers", "mesh.RoleNode"} {
		if !real.roleConsts[want] {
			t.Errorf("the vocabulary does not know the role %s: %+v", want, real.roleConsts)
		}
	}
	if real.roleNames["tcp-watch"] || !real.roleNames["mesh-node"] || !real.kindNames["command"] {
		t.Errorf("the roles of kinds are %v", real.roleNames)
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

// TestStepIsKindFree: a scenario's step is its parameters and its kind's
// spec, behind kind.Spec; it has no field of a kind of its own (the union
// of nillable pointers, one per kind, that issue 32 removed).
func TestStepIsKindFree(t *testing.T) {
	st := reflect.TypeFor[scenario.Step]()
	var names []string
	for f := range st.Fields() {
		names = append(names, f.Name)
		for _, k := range kinds.All() {
			if strings.EqualFold(f.Name, string(k.Name)) {
				t.Errorf("scenario.Step has a field %s of the %s kind: it belongs in the kind's spec", f.Name, k.Name)
			}
		}
		if pkg := f.Type.PkgPath(); strings.Contains(pkg, "/internal/workload/") && !strings.HasSuffix(pkg, "/workload/kind") {
			t.Errorf("scenario.Step's field %s is of %s, a kind's type", f.Name, f.Type)
		}
	}
	if !slices.Equal(names, []string{"Params", "Spec"}) {
		t.Errorf("scenario.Step's fields are %v, want Params and Spec", names)
	}
}

// vocabulary is what names a kind in code: its name ("eventdb") or its
// constant in results (results.EventDB), and its agent roles, by name
// ("eventdb-server") or by a constant of that value (eventdb.RoleServer).
type vocabulary struct {
	kinds      map[string]bool // the names of results' constants of type Kind
	kindNames  map[string]bool // the registered kinds' names
	roleNames  map[string]bool // the registered kinds' roles
	roleConsts map[string]bool // "pkg.Const", a string constant of a role's name
}

// vocabularyOf reads the vocabulary of the module under root: results'
// kind constants, the registered kinds' roles, and the constants anywhere
// that hold a role's name.
func vocabularyOf(root string) (vocabulary, error) {
	v := vocabulary{kinds: map[string]bool{}, kindNames: map[string]bool{}, roleNames: map[string]bool{}, roleConsts: map[string]bool{}}
	for _, k := range kinds.All() {
		v.kindNames[string(k.Name)] = true
		for _, r := range k.Roles {
			v.roleNames[r.Name] = true
		}
	}
	err := walkSources(root, func(_ *token.FileSet, rel string, f *ast.File) {
		inResults := filepath.ToSlash(filepath.Dir(rel)) == "internal/results"
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); ok && inResults && id.Name == "Kind" {
					for _, n := range vs.Names {
						v.kinds[n.Name] = true
					}
				}
				for i, val := range vs.Values {
					if lit, ok := val.(*ast.BasicLit); ok && lit.Kind == token.STRING && i < len(vs.Names) {
						if s, _ := strconv.Unquote(lit.Value); v.roleNames[s] {
							v.roleConsts[f.Name.Name+"."+vs.Names[i].Name] = true
						}
					}
				}
			}
		}
	})
	return v, err
}

// walkSources parses every non-test, non-generated Go file of the module
// under root (but those in testdata and hidden folders) and calls fn with
// each, its path from root and the file set its positions are in.
func walkSources(root string, fn func(fset *token.FileSet, rel string, f *ast.File)) error {
	fset := token.NewFileSet()
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
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
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if !ast.IsGenerated(f) {
			fn(fset, rel, f)
		}
		return nil
	})
}

// dispatchSites lists, by package (a folder of the module under root),
// the file:line of each place that dispatches on a workload kind, outside
// the kinds' packages (internal/workload/...) and results.
func dispatchSites(root string, v vocabulary) (map[string][]string, error) {
	sites := map[string][]string{}
	err := walkSources(root, func(fset *token.FileSet, rel string, f *ast.File) {
		pkg := filepath.ToSlash(filepath.Dir(rel))
		if match("internal/workload/...", pkg) || pkg == "internal/results" {
			return
		}
		for _, pos := range fileSites(f, v) {
			sites[pkg] = append(sites[pkg], fmt.Sprintf("%s:%d", rel, fset.Position(pos).Line))
		}
	})
	return sites, err
}

// fileSites finds a file's dispatch sites: a switch whose tag or cases
// name a kind or a kind's role, an if whose condition does, a table keyed
// by kinds, and any other comparison with a kind or a kind's role.
func fileSites(f *ast.File, v vocabulary) []token.Pos {
	names := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.SelectorExpr:
			x, ok := e.X.(*ast.Ident)
			return ok && (x.Name == "results" && v.kinds[e.Sel.Name] || v.roleConsts[x.Name+"."+e.Sel.Name])
		case *ast.BasicLit:
			s, err := strconv.Unquote(e.Value)
			return e.Kind == token.STRING && err == nil && (v.roleNames[s] || v.kindNames[s])
		}
		return false
	}
	// mentions says whether an expression names a kind or a kind's role.
	mentions := func(n ast.Node) bool {
		found := false
		ast.Inspect(n, func(n ast.Node) bool {
			if e, ok := n.(ast.Expr); ok && names(e) {
				found = true
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
			hit := s.Tag != nil && mentions(s.Tag)
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
			if m, ok := s.Type.(*ast.MapType); ok && isKindType(m.Key) {
				sites = append(sites, s.Pos())
				return false
			}
		case *ast.BinaryExpr:
			if !counted[s] && (s.Op == token.EQL || s.Op == token.NEQ) && (names(s.X) || names(s.Y)) {
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
