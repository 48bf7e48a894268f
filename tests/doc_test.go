package tests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// libraryDirs are the packages of the library, whose exported identifiers
// users read with go doc.
var libraryDirs = []string{"sys", "insn", "mapfd", "prog", "tracefs", "perfring", "usdt"}

// TestDocComments: every exported identifier of the library has a doc
// comment of its own, which go doc shows: functions, methods, types, each
// constant and variable (a comment on a group of them is dropped by go doc
// for the identifier: `go doc mapfd Map.KeySize` printed nothing), and each
// exported struct field, above it or at the end of its line. The fields of
// sys's attr and info structs are exempt: they mirror the uapi's, and their
// struct's doc must say so.
// uapiMirror is what the doc of a sys attr or info struct says.
var uapiMirror = regexp.MustCompile(`(union bpf_attr|struct bpf_\w+_info)\b.*fields as the uapi names them`)

func TestDocComments(t *testing.T) {
	eachLibraryFile(t, func(dir string, fset *token.FileSet, f *ast.File) {
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
						st, ok := s.Type.(*ast.StructType)
						if !ok || !s.Name.IsExported() {
							continue
						}
						// A uapi mirror: an attr or an info struct.
						name := s.Name.Name
						mirror := strings.HasSuffix(name, "Attr") || strings.HasSuffix(name, "Info")
						if dir == "sys" && mirror {
							doc := s.Doc
							if doc == nil {
								doc = d.Doc
							}
							if !uapiMirror.MatchString(strings.Join(strings.Fields(doc.Text()), " ")) {
								t.Errorf("%s: %s: its doc must say it mirrors a member of union bpf_attr or a struct bpf_*_info, fields as the uapi names them", fset.Position(s.Pos()), s.Name.Name)
							}
							continue
						}
						for _, fl := range st.Fields.List {
							for _, n := range fl.Names {
								if n.IsExported() && fl.Doc == nil && fl.Comment == nil {
									missing(s.Name.Name + "." + n.Name)
								}
							}
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
