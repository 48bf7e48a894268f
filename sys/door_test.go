package sys_test

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// doorAllowed are the functions and variables of golang.org/x/sys/unix
// that other packages may use: they ask the kernel for nothing a reviewer
// must see (closing an fd the package owns, reading its own process's
// state) or are no system call at all.
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
	"IoctlGetWinsize":   true, // reads a terminal's size (bpfkit top fits its table to it)
}

// osAllowed are the functions and variables of package os that other
// packages may use: reading files and directories (and comparing what
// Stat says of two), the process's own state and standard streams,
// errors. The rest of os creates, writes, removes,
// renames, links or changes files (or wraps a raw fd: NewFile), or starts
// processes.
var osAllowed = map[string]bool{
	"Open": true, "ReadFile": true, "ReadDir": true, "Stat": true, "Lstat": true, "Readlink": true,
	"Args": true, "Exit": true, "Getenv": true, "LookupEnv": true, "Executable": true,
	"Getpid": true, "Geteuid": true, "Getuid": true, "Getpagesize": true, "Interrupt": true,
	"Stdin": true, "Stdout": true, "Stderr": true,
	"IsNotExist": true, "IsExist": true, "IsPermission": true, "SameFile": true,
	"ErrNotExist": true, "ErrExist": true, "ErrPermission": true, "ErrClosed": true, "ErrDeadlineExceeded": true,
}

// importBanned are packages whose use is a door of its own.
var importBanned = map[string]string{
	"os/exec":   "runs programs (mount, tee into tracefs), unjournaled",
	"io/ioutil": "writes files (WriteFile, TempFile)",
	"C":         "cgo calls anything",
}

// linknameAllowed are the go:linkname targets outside sys: runtime
// internals that make no system call.
var linknameAllowed = map[string]bool{"runtime.goyield": true}

// doorExempt is test support that talks to the kernel itself, unjournaled:
// internal/testutil mounts private bpffs and cgroup2 views, unmounts them
// and removes its test cgroup (sys has no unmount or rmdir, and should not
// grow them for tests). TestSingleDoor checks that only _test.go files
// import it, so none of it is in the library or the tools.
var doorExempt = map[string]bool{"internal/testutil": true}

// TestSingleDoor enforces that sys is the only package that talks to the
// kernel. Outside sys (and tests), no file may
//   - refer to a function or variable of golang.org/x/sys/unix other than
//     those in doorAllowed, called or not (a function value such as
//     mm := unix.Mmap is a call waiting to happen), nor to one of package
//     syscall; constants and types (unix.Signal(n), syscall.SIGTERM) are free;
//   - refer to a function or variable of os outside osAllowed, nor call
//     Chmod, Chown or Truncate on an open file;
//   - import os/exec, io/ioutil or C, or dot-import unix, syscall or os;
//   - pack an address into an integer (uintptr(unsafe.Pointer(p))) for the
//     kernel: sys.Pointer keeps what it points to alive;
//   - link to a symbol by go:linkname outside linknameAllowed, or hold a
//     system call instruction in assembly.
//
// Reading files (/proc, tracefs formats) is not talking to the kernel in
// this sense: it changes nothing. Nor are sockets and signals (dropmon's
// metrics listener, a tool's SIGTERM), the program's own I/O.
func TestSingleDoor(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]map[string]bool{}
	for _, pkg := range []string{"golang.org/x/sys/unix", "syscall", "os"} {
		funcs[pkg] = funcsAndVars(t, pkg)
	}
	for pkg, name := range map[string]string{"golang.org/x/sys/unix": "Syscall", "syscall": "RawSyscall", "os": "WriteFile"} {
		if !funcs[pkg][name] {
			t.Fatalf("%s.%s not found among its functions: the source walk is broken", pkg, name)
		}
	}
	allowed := map[string]map[string]bool{"golang.org/x/sys/unix": doorAllowed, "os": osAllowed, "syscall": {}}
	asmSyscall := regexp.MustCompile(`(?im)^\s*(SYSCALL|SYSENTER|INT\s+\$0x80|SVC|ECALL)\b`)
	var bad []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "sys" || rel == "tests" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".s") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if m := asmSyscall.Find(b); m != nil {
				bad = append(bad, rel+": system call instruction "+strings.TrimSpace(string(m)))
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		test := strings.HasSuffix(path, "_test.go")
		names := map[string]string{} // local name -> import path
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "github.com/bpfkit/bpfkit/internal/testutil" && !test {
				bad = append(bad, rel+": imports internal/testutil, which is exempt only as test support")
			}
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			switch {
			case test:
			case importBanned[p] != "":
				bad = append(bad, rel+": imports "+p+", which "+importBanned[p])
			case name == "." && allowed[p] != nil:
				bad = append(bad, rel+": dot-imports "+p+", hiding what it calls")
			}
			names[name] = p
		}
		if test || doorExempt[filepath.ToSlash(filepath.Dir(rel))] {
			return nil
		}
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				if fields := strings.Fields(c.Text); len(fields) == 3 && fields[0] == "//go:linkname" && !linknameAllowed[fields[2]] {
					bad = append(bad, rel+": go:linkname to "+fields[2])
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				// uintptr(unsafe.Pointer(p)) hides p from the garbage
				// collector: an address handed to the kernel goes in a
				// sys.Pointer.
				if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "uintptr" && len(call.Args) == 1 {
					if inner, ok := call.Args[0].(*ast.CallExpr); ok {
						if sel, ok := inner.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Pointer" {
							bad = append(bad, rel+": uintptr(unsafe.Pointer(...))")
						}
					}
				}
				// An *os.File's own system calls that change the file.
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); !ok || names[x.Name] == "" {
						switch sel.Sel.Name {
						case "Chmod", "Chown", "Truncate":
							bad = append(bad, rel+": ."+sel.Sel.Name+"(...)")
						}
					}
				}
			}
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			p := names[pkg.Name]
			if funcs[p][sel.Sel.Name] && !allowed[p][sel.Sel.Name] {
				bad = append(bad, rel+": "+pkg.Name+"."+sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("kernel-facing code outside sys: %s", b)
	}
}

// funcsAndVars lists the exported package-level functions and variables of
// the package at importPath, from its source, on Linux on every GOARCH.
func funcsAndVars(t *testing.T, importPath string) map[string]bool {
	pkg, err := build.Import(importPath, ".", build.FindOnly)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(pkg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	ctx := build.Default
	ctx.GOOS = "linux"
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		linux := false
		for _, arch := range []string{"amd64", "386", "arm64", "arm", "riscv64", "ppc64le", "s390x", "mips", "mips64le", "loong64"} {
			ctx.GOARCH = arch
			if ok, _ := ctx.MatchFile(pkg.Dir, e.Name()); ok {
				linux = true
				break
			}
		}
		if !linux {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(pkg.Dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					out[d.Name.Name] = true
				}
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, s := range d.Specs {
					for _, n := range s.(*ast.ValueSpec).Names {
						if n.IsExported() {
							out[n.Name] = true
						}
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no functions found in %s", importPath, pkg.Dir)
	}
	return out
}
