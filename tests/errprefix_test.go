package tests

import (
	"go/ast"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// TestErrorPrefixes: every error a library package P returns starts with
// "P: " (sys's *Error with its call's name). Each package's adversarial
// test checks the errors its hostile calls get; this checks the sources:
// every sentinel (a package-level errors.New or fmt.Errorf) starts with
// "P: "; so does every message an exported function or method makes,
// unless it leads with an error of P's own ("%w: ...", ErrInvalid) or is
// handed straight to a call that wraps it; and sys.Wrap is always given P.
func TestErrorPrefixes(t *testing.T) {
	eachLibraryFile(t, func(dir string, fset *token.FileSet, f *ast.File) {
		bad := func(n ast.Node, what, s string) {
			t.Errorf("%s: %s %q does not start with %q", fset.Position(n.Pos()), what, s, dir+": ")
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if v, ok := s.(*ast.ValueSpec); ok && d.Tok == token.VAR {
						for _, e := range v.Values {
							if s, ok := errorText(e); ok && !strings.HasPrefix(s, dir+": ") {
								bad(e, "sentinel", s)
							}
						}
					}
				}
			case *ast.FuncDecl:
				if d.Body == nil {
					continue
				}
				exported := d.Name.IsExported() && (d.Recv == nil || exportedRecv(d.Recv))
				args := map[ast.Expr]bool{} // the arguments of calls: wrapped where they are made
				ast.Inspect(d.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					for _, a := range call.Args {
						args[a] = true
					}
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Wrap" && len(call.Args) > 0 {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == "sys" {
							if lit, ok := call.Args[0].(*ast.BasicLit); !ok || lit.Value != strconv.Quote(dir) {
								t.Errorf("%s: sys.Wrap in %s not given %q", fset.Position(call.Pos()), dir, dir)
							}
						}
					}
					if s, ok := errorText(call); ok && exported && !args[call] && !strings.HasPrefix(s, dir+": ") && !ownLead(call, s) {
						bad(call, "error", s)
					}
					return true
				})
			}
		}
	})
}

// ownLead reports whether the message of fmt.Errorf call, s, leads with an
// error of the package's own ("%w: ...", ErrInvalid), which has the prefix.
func ownLead(call *ast.CallExpr, s string) bool {
	if len(call.Args) < 2 || !strings.HasPrefix(s, "%w") {
		return false
	}
	id, ok := call.Args[1].(*ast.Ident)
	return ok && (strings.HasPrefix(id.Name, "Err") || strings.HasPrefix(id.Name, "err") && len(id.Name) > 3)
}

// errorText is the literal text of errors.New("...") or fmt.Errorf("...", ...).
func errorText(e ast.Expr) (string, bool) {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) == 0 {
		return "", false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok || !(pkg.Name == "errors" && sel.Sel.Name == "New" || pkg.Name == "fmt" && sel.Sel.Name == "Errorf") {
		return "", false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
