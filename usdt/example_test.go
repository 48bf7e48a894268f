package usdt_test

import (
	"bufio"
	"debug/elf"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/usdt"
)

// sdt is the program the examples trace: testdata/sdt.c, a C program
// with USDT probes (sys/sdt.h) that fires them when told to on its stdin.
// rootExamples builds it.
var sdt string

// Open lists the probes of a binary: each provider:name, with a call site
// per expansion of the probe macro (sdt inlines bpfkit:str twice).
func ExampleOpen() {
	f, err := usdt.Open(sdt)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range f.Probes {
		fmt.Println(p, "sites:", len(p.Sites))
	}

	// With sdt built, it prints:
	// bpfkit:args sites: 1
	// bpfkit:str sites: 2
	// bpfkit:global sites: 2
}

// Probe finds one probe by name; the error for a name the file does not
// have lists those it has.
func ExampleFile_Probe() {
	f, err := usdt.Open(sdt)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := f.Probe("bpfkit:str")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range p.Sites {
		// Where the uprobe goes, the semaphore that tells sdt it is
		// traced, and two arguments: a string's address and a number.
		fmt.Println(s.Offset > 0, s.Semaphore > 0, len(strings.Fields(s.Args)))
	}
	_, err = f.Probe("bpfkit:nope")
	_, has, _ := strings.Cut(err.Error(), "; ")
	fmt.Println(has)

	// With sdt built, it prints:
	// true true 2
	// true true 2
	// it has bpfkit:args, bpfkit:str, bpfkit:global
}

// ParseArgs reads a call site's argument string, as the note writes it in
// the assembler's syntax: on x86-64, a signed int in edi, 8 bytes at
// rbp-16 and the constant 5; on arm64, 8 bytes at sp+16.
func ExampleParseArgs() {
	kinds := map[usdt.ArgKind]string{usdt.ArgConst: "constant", usdt.ArgReg: "register", usdt.ArgDeref: "memory"}
	for _, c := range []struct {
		machine elf.Machine
		args    string
	}{{elf.EM_X86_64, "-4@%edi 8@-16(%rbp) 4@$5"}, {elf.EM_AARCH64, "8@[sp, 16]"}} {
		args, err := usdt.ParseArgs(c.machine, c.args)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, a := range args {
			fmt.Printf("%-8s %-3s %3d, %d bytes, signed %v; pt_regs offset %d\n", kinds[a.Kind], a.Reg, a.Value, a.Size, a.Signed, a.PtRegs)
		}
	}
	_, err := usdt.ParseArgs(elf.EM_X86_64, "4@foo(%rip)")
	fmt.Println(err)
	// Output:
	// register edi   0, 4 bytes, signed true; pt_regs offset 112
	// memory   rbp -16, 8 bytes, signed false; pt_regs offset 32
	// constant       5, 4 bytes, signed false; pt_regs offset 0
	// memory   sp   16, 8 bytes, signed false; pt_regs offset 248
	// usdt: argument 0 "4@foo(%rip)": %rip-relative: a global variable, which Probe.ParseArgs finds in the file's symbols
}

// Attach runs a program at every call site of a probe, here in one
// process: sdt fires bpfkit:args with 3*i as its second argument, for i
// from 0, and the program adds them up.
func ExampleAttach() {
	f, err := usdt.Open(sdt)
	if err != nil {
		fmt.Println(err)
		return
	}
	probe, err := f.Probe("bpfkit:args")
	if err != nil {
		fmt.Println(err)
		return
	}
	sum, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: mapfd.Array, MaxEntries: 1, Name: "sum"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sum.Close()
	traced, err := startSDT()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer traced.stop()
	a, err := usdt.Attach(probe, usdt.Options{PID: traced.pid}, func(args *usdt.Args) ([]insn.Item, error) {
		load, err := args.Load(insn.R7, insn.R6, 1) // r7 = argument 1; Load uses the stack above r10-Scratch
		items := append([]insn.Item{insn.Mov64Reg(insn.R6, insn.R1)}, load...)
		items = append(items, insn.StoreImm(insn.BPF_W, insn.R10, -usdt.Scratch-8, 0)) // key 0
		items = append(items, insn.MapAdd(sum, -usdt.Scratch-8, -usdt.Scratch-16, insn.R7)...)
		return append(items, insn.Mov64Imm(insn.R0, 0), insn.Exit()), err
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	fmt.Println(traced.do("fire 4"))
	total, err := sum.Lookup(0)
	fmt.Println("sum:", total, err)

	// As root, it prints:
	// fired 4
	// sum: 18 <nil>
}

// Enable sets a probe's semaphore without tracing its sites. sdt fires
// bpfkit:str only while its semaphore is set, and says on "sem" what its
// two semaphores hold.
func ExampleEnable() {
	f, err := usdt.Open(sdt)
	if err != nil {
		fmt.Println(err)
		return
	}
	probe, err := f.Probe("bpfkit:str")
	if err != nil {
		fmt.Println(err)
		return
	}
	traced, err := startSDT()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer traced.stop()
	fmt.Println(traced.do("sem"))
	e, err := usdt.Enable(probe, usdt.Options{PID: traced.pid})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(traced.do("sem"))
	e.Close()
	fmt.Println(traced.do("sem"))

	// As root, it prints:
	// sem 0 0
	// sem 0 1
	// sem 0 0
}

// sdtProc is sdt running, driven through its stdin.
type sdtProc struct {
	cmd *exec.Cmd
	pid int
	in  io.WriteCloser
	out *bufio.Reader
}

// startSDT starts sdt and waits for its "ready".
func startSDT() (*sdtProc, error) {
	cmd := exec.Command(sdt)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &sdtProc{cmd, cmd.Process.Pid, in, bufio.NewReader(out)}
	if line, err := p.out.ReadString('\n'); line != "ready\n" {
		p.stop()
		return nil, fmt.Errorf("sdt said %q, %v", line, err)
	}
	return p, nil
}

// do sends sdt one command and returns its answer.
func (p *sdtProc) do(command string) string {
	fmt.Fprintln(p.in, command)
	line, err := p.out.ReadString('\n')
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(line)
}

// stop ends sdt: it exits at the end of its input.
func (p *sdtProc) stop() {
	p.in.Close()
	p.cmd.Wait()
}

// rootExamples are the examples that need root (or sdt): TestExamples
// runs them. In the VMs sdt is among the tools tests/vm/run.sh builds;
// here it is built now, with gcc and sys/sdt.h (systemtap-sdt-dev).
func rootExamples(t *testing.T) []testutil.RootExample {
	skip := ""
	if d := os.Getenv("BPFKIT_TOOLS"); d != "" {
		sdt = filepath.Join(d, "sdt")
		if _, err := os.Stat(sdt); err != nil {
			skip = "no sdt among the VM's tools: tests/vm/run.sh builds it where gcc, libc6-dev and systemtap-sdt-dev are installed"
		}
	} else if _, err := exec.LookPath("gcc"); err != nil {
		skip = "no gcc to build sdt: install gcc and libc6-dev"
	} else if hs, _ := filepath.Glob("/usr/include/*/sys/sdt.h"); len(hs) == 0 {
		skip = "no sys/sdt.h to build sdt: install systemtap-sdt-dev"
	} else {
		sdt = filepath.Join(t.TempDir(), "sdt")
		if b, err := exec.Command("gcc", "-O2", "-o", sdt, "testdata/sdt.c").CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, b)
		}
	}
	return []testutil.RootExample{{F: ExampleOpen, Skip: skip}, {F: ExampleFile_Probe, Skip: skip},
		{F: ExampleAttach, Skip: skip}, {F: ExampleEnable, Skip: skip}}
}

// exampleSource is this file, embedded for the test binaries that run
// without their sources (in the VMs).
//
//go:embed example_test.go
var exampleSource []byte

// TestExamples runs the examples of rootExamples, as root, against their
// "it prints:" comments (testutil.RunExamples).
func TestExamples(t *testing.T) { testutil.RunExamples(t, exampleSource, rootExamples(t)) }
