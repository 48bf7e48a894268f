package sys_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// doorAllowed are the calls into golang.org/x/sys/unix that other packages
// may make: they ask the kernel for nothing a reviewer must see (closing an
// fd the package owns, reading its own process's state) or are no system
// call at all.
var doorAllowed = map[string]bool{
	"Close":             true, // releasing an fd that sys handed out
	"ByteSliceToString": true,
	"ErrnoName":         true,
	"Getpagesize":       true,
	"Auxv":              true, // the auxiliary vector the runtime kept
	"Getpid":            true,
	"Gettid":            true,
	"Uname":             true,
	"Getrlimit":         true,
	"ClockGettime":      true, // reads the clock (vDSO)
}

// TestSingleDoor enforces that sys is the only package that talks to the
// kernel: outside sys (and tests), no file imports syscall, calls
// golang.org/x/sys/unix for anything but constants, types and the calls in
// doorAllowed, or writes a file with os.WriteFile, os.Create or os.OpenFile.
// Reading files (/proc, tracefs formats) is not talking to the kernel in
// this sense: it changes nothing. Nor may an address be packed into an
// integer (uintptr(unsafe.Pointer(p))) for the kernel: sys.Pointer keeps
// what it points to alive.
func TestSingleDoor(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "sys" || rel == "tests" || rel == "internal" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		names := map[string]string{} // local name -> import path
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = p
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			// uintptr(unsafe.Pointer(p)) hides p from the garbage collector:
			// an address handed to the kernel goes in a sys.Pointer.
			if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "uintptr" && len(call.Args) == 1 {
				if inner, ok := call.Args[0].(*ast.CallExpr); ok {
					if sel, ok := inner.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Pointer" {
						bad = append(bad, rel+": uintptr(unsafe.Pointer(...))")
					}
				}
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			switch names[pkg.Name] {
			case "syscall":
				if !isConversion(sel.Sel.Name) {
					bad = append(bad, rel+": syscall."+sel.Sel.Name)
				}
			case "golang.org/x/sys/unix":
				if !doorAllowed[sel.Sel.Name] && !isConversion(sel.Sel.Name) {
					bad = append(bad, rel+": unix."+sel.Sel.Name)
				}
			case "os":
				switch sel.Sel.Name {
				case "WriteFile", "Create", "OpenFile", "Remove", "RemoveAll", "Mkdir", "MkdirAll":
					bad = append(bad, rel+": os."+sel.Sel.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("kernel-facing call outside sys: %s", b)
	}
}

// isConversion reports a type conversion such as unix.Signal(n) or
// syscall.Errno(e), which calls nothing.
func isConversion(name string) bool {
	switch name {
	case "Signal", "Errno", "Sockaddr":
		return true
	}
	return false
}
