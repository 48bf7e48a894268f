package tests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// libraryDirs are the packages of the library, whose exported identifiers
// users read with go doc.
var libraryDirs = []string{"sys", "insn", "mapfd", "prog", "tracefs", "perfring", "usdt"}

// TestDocComments: every exported identifier of the library has a doc
// comment of its own, which go doc shows: functions, methods, types, and
// each constant and variable (a comment on a group of them is dropped by
// go doc for the identifier: `go doc mapfd Map.KeySize` printed nothing).
func TestDocComments(t *testing.T) {
	eachLibraryFile(t, func(_ string, fset *token.FileSet, f *ast.File) {
		missing := func(name string) { t.Errorf("%s: %s has no doc comment", fset.Position(f.Pos()).Filename[3:], name) }
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && d.Doc == nil && (d.Recv == nil || exportedRecv(d.Recv)) {
					missing(d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() && s.Doc == nil && s.Comment == nil && (d.Doc == nil || len(d.Specs) > 1) {
							missing(s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() && s.Doc == nil && s.Comment == nil && (d.Doc == nil || len(d.Specs) > 1) {
								missing(n.Name)
							}
						}
					}
				}
			}
		}
	})
}

// eachLibraryFile calls fn with every non-test file of the library, parsed
// with its comments, and the package directory it is in.
func eachLibraryFile(t *testing.T, fn func(dir string, fset *token.FileSet, f *ast.File)) {
	for _, dir := range libraryDirs {
		files, _ := filepath.Glob(filepath.Join("..", dir, "*.go"))
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			fn(dir, fset, f)
		}
	}
}

func exportedRecv(r *ast.FieldList) bool {
	typ := r.List[0].Type
	if s, ok := typ.(*ast.StarExpr); ok {
		typ = s.X
	}
	if g, ok := typ.(*ast.IndexExpr); ok {
		typ = g.X
	}
	if g, ok := typ.(*ast.IndexListExpr); ok {
		typ = g.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.IsExported()
}
