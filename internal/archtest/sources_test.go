package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxMethods is the most methods a type may have (docs/architecture.md).
const maxMethods = 25

// sourceFile is a parsed Go file of a package (not a test) and its path.
type sourceFile struct {
	path string
	*ast.File
}

// parseSources parses into fset the Go files the globs match (relative to
// this package), tests left out, in the globs' order.
func parseSources(t *testing.T, fset *token.FileSet, globs ...string) []sourceFile {
	t.Helper()
	var out []sourceFile
	for _, glob := range globs {
		paths, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range paths {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, sourceFile{path: path, File: f})
		}
	}
	return out
}

// checkMethodCounts fails t for each type of package pkg (as files declare
// it) with more than maxMethods methods; hint says how to split one.
func checkMethodCounts(t *testing.T, pkg string, files []sourceFile, hint string) {
	t.Helper()
	methods := map[string]int{}
	for _, f := range files {
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil {
				methods[receiverName(fn)]++
			}
		}
	}
	if len(methods) == 0 {
		t.Fatalf("found no methods in %s", pkg)
	}
	for typ, n := range methods {
		if n > maxMethods {
			t.Errorf("%s.%s has %d methods: at most %d (%s)", pkg, typ, n, maxMethods, hint)
		}
	}
}

// receiverName is the name of fn's receiver type, without * or type
// parameters ("" if it has none).
func receiverName(fn *ast.FuncDecl) string {
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
