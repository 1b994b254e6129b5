package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// engineModelTypes are the types of the engine's link model (linkemu): a
// file that declares a method of one is a model file.
var engineModelTypes = []string{"model", "direction", "pool", "eventHeap", "shape", "crossGen", "finishRing", "captureRing", "pathTable"}

// engineSyscallImports are what a model file must not import: the model
// makes no system call, so that it runs, and is tested, on a virtual clock
// without file descriptors. The shard (engine.go, poll.go, writer.go) and
// the TUN port (port_tun.go) make them.
var engineSyscallImports = []string{"golang.org/x/sys/unix", "syscall", "os", "unsafe"}

// engineClockReads would tie the model to the wall clock: it takes the time
// from its caller.
var engineClockReads = []string{"time.Now", "time.Since", "time.Until", "time.Sleep"}

// TestModelMakesNoSyscalls holds the engine to its shape: every file that
// declares a method of a model type makes no system call and reads no
// clock, and no type of the engine has more than 25 methods.
func TestModelMakesNoSyscalls(t *testing.T) {
	fset := token.NewFileSet()
	files := parseSources(t, fset, "../linkemu/*.go")
	var modelFiles []string
	for _, f := range files {
		problems := engineModelProblems(fset, f.File)
		if problems == nil {
			continue
		}
		modelFiles = append(modelFiles, filepath.Base(f.path))
		for _, p := range problems {
			t.Error(p)
		}
	}
	if len(modelFiles) < 5 {
		t.Errorf("found model methods in %v only: is engineModelTypes out of date?", modelFiles)
	}
	checkMethodCounts(t, "linkemu", files, "split it")
}

// TestModelRuleCatchesABreach checks the rule on a made-up model file.
func TestModelRuleCatchesABreach(t *testing.T) {
	for _, tt := range []struct {
		src  string
		want int
	}{
		{"package linkemu\nimport \"golang.org/x/sys/unix\"\nfunc (m *model) f() { unix.Getpid() }", 1},
		{"package linkemu\nimport \"time\"\nfunc (d *direction) f() int64 { return int64(time.Since(time.Now())) }", 2},
		{"package linkemu\nimport \"golang.org/x/sys/unix\"\nfunc (e *shard) f() { unix.Getpid() }", 0},
		{"package linkemu\nimport \"time\"\nfunc (m *model) f(now int64) int64 { return now + int64(time.Millisecond) }", 0},
	} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", tt.src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := engineModelProblems(fset, f); len(got) != tt.want {
			t.Errorf("%q: problems %q, want %d", tt.src, got, tt.want)
		}
	}
}

// engineModelProblems returns, for a file that declares a method of a model
// type, its system-call imports and clock reads (an empty, non-nil slice if
// none); nil for any other file.
func engineModelProblems(fset *token.FileSet, f *ast.File) []string {
	model := false
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil && slices.Contains(engineModelTypes, receiverName(fn)) {
			model = true
		}
	}
	if !model {
		return nil
	}
	problems := []string{}
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); slices.Contains(engineSyscallImports, path) {
			problems = append(problems, fset.Position(imp.Pos()).String()+": a file of the link model imports "+path+
				": the model makes no system call; make it in the shard (engine.go) or a Port")
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if pkg, ok := sel.X.(*ast.Ident); ok && slices.Contains(engineClockReads, pkg.Name+"."+sel.Sel.Name) {
			problems = append(problems, fset.Position(sel.Pos()).String()+": a file of the link model calls "+pkg.Name+"."+sel.Sel.Name+
				": the model takes the time from its caller")
		}
		return true
	})
	return problems
}
