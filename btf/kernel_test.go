package btf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/sys"
)

// TestVmlinuxAgainstBpftool looks names up in the kernel's BTF and
// compares the ids with bpftool's dump of the same file: every 8th
// btf_trace_ TYPEDEF, every 250th FUNC, and the FUNC names bpftool lists
// twice, which Find must refuse.
func TestVmlinuxAgainstBpftool(t *testing.T) {
	if testing.Short() {
		t.Skip("compares every function of the kernel's BTF with bpftool's: not under -short")
	}
	vmlinux, err := Vmlinux()
	if errors.Is(err, ErrNoKernelBTF) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer vmlinux.Close()
	if _, err := exec.LookPath("bpftool"); err != nil {
		t.Skip("no bpftool to compare with (make deps installs it)")
	}
	out, err := exec.Command("bpftool", "btf", "dump", "file", VmlinuxPath).Output()
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^\[(\d+)\] (FUNC|TYPEDEF|[A-Z_0-9]+) '([^']*)'`)
	ids := map[Kind]map[string][]uint32{KindFunc: {}, KindTypedef: {}}
	var last uint32
	for s := bufio.NewScanner(bytes.NewReader(out)); s.Scan(); {
		m := line.FindStringSubmatch(s.Text())
		if m == nil {
			continue
		}
		id, _ := strconv.ParseUint(m[1], 10, 32)
		last = uint32(id)
		if k := map[string]Kind{"FUNC": KindFunc, "TYPEDEF": KindTypedef}[m[2]]; k != 0 {
			ids[k][m[3]] = append(ids[k][m[3]], uint32(id))
		}
	}
	if n, err := vmlinux.Count(); err != nil || n != last {
		t.Fatalf("Count = %d, %v; bpftool's last id is %d", n, err, last)
	}
	checked, twice := 0, 0
	for kind, names := range ids {
		i := 0
		for name, want := range names {
			i++
			trace := kind == KindTypedef && len(name) > 10 && name[:10] == "btf_trace_"
			sampled := kind == KindFunc && (i%250 == 0 || len(want) > 1 && twice < 20)
			if !(trace && i%8 == 0 || sampled) {
				continue
			}
			checked++
			id, err := vmlinux.Find(kind, name)
			switch {
			case len(want) > 1:
				twice++
				if !errors.Is(err, ErrAmbiguous) {
					t.Errorf("Find(%s, %q) = %d, %v; bpftool lists it at %v, want ErrAmbiguous",
						kind, name, id, err, want)
				}
			case err != nil || id != want[0]:
				t.Errorf("Find(%s, %q) = %d, %v; bpftool says %d", kind, name, id, err, want[0])
			}
		}
	}
	t.Logf("%d types, %d names checked (%d that appear twice)", last, checked, twice)
	if checked < 100 {
		t.Fatalf("only %d names checked: bpftool's output was not read", checked)
	}
}

// TestModules: every module's BTF object opens, and its split BTF counts
// its types after vmlinux's; a module name no module has is ErrNotFound.
func TestModules(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	vmlinux, err := Vmlinux()
	if err != nil {
		t.Skip(err)
	}
	defer vmlinux.Close()
	if _, err := OpenModule("no_such_module_bpfkit"); !errors.Is(err, ErrNotFound) {
		t.Errorf("OpenModule(no_such_module_bpfkit): %v, want ErrNotFound", err)
	}
	ents, _ := os.ReadDir("/sys/kernel/btf")
	n := 0
	for _, e := range ents {
		if e.Name() == "vmlinux" {
			continue
		}
		o, err := OpenModule(e.Name())
		if err != nil {
			t.Errorf("module %s: %v", e.Name(), err)
			continue
		}
		file, _ := os.ReadFile("/sys/kernel/btf/" + e.Name())
		b, err := o.Blob(vmlinux.Blob)
		if err != nil || !bytes.Equal(o.raw, file) {
			t.Errorf("module %s: %v; its BTF from bpf(2) equals the file's: %v", e.Name(), err,
				bytes.Equal(o.raw, file))
		}
		o.Close()
		n++
		if b != nil && b.firstID <= 1 {
			t.Errorf("module %s: its ids start at %d, not after vmlinux's", e.Name(), b.firstID)
		}
	}
	if n == 0 {
		t.Skip("no module with BTF is loaded (/sys/kernel/btf holds vmlinux alone)")
	}
	if _, err := os.Stat("/sys/kernel/btf/tun"); err != nil {
		return // tests/vm/run.sh loads tun in the VMs
	}
	// tun_chr_open, by module and by name alone: the same id, after vmlinux's.
	count, err := vmlinux.Count()
	if err != nil {
		t.Fatal(err)
	}
	id, o, err := Lookup(KindFunc, "tun_chr_open", "tun")
	if err != nil || o == nil || o.Name != "tun" || id <= count {
		t.Fatalf("Lookup(tun_chr_open, tun) = %d, %v, %v; vmlinux has %d types", id, o, err, count)
	}
	o.Close()
	id2, o, err := Lookup(KindFunc, "tun_chr_open", "")
	if err != nil || o == nil || o.Name != "tun" || id2 != id {
		t.Fatalf("Lookup(tun_chr_open) = %d, %v, %v; by module %d", id2, o, err, id)
	}
	o.Close()
}

// TestNoSuchName: a function that no BTF has is ErrNotFound, after the
// modules were searched too.
func TestNoSuchName(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	if _, err := os.Stat(VmlinuxPath); err != nil {
		t.Skip(err)
	}
	id, o, err := Lookup(KindFunc, "bpfkit_no_such_function", "")
	if !errors.Is(err, ErrNotFound) || o != nil || id != 0 {
		t.Fatalf("Lookup of a function that does not exist: %d, %v, %v", id, o, err)
	}
	id, o, err = Lookup(KindFunc, "vfs_read", "")
	if err != nil || o != nil || id == 0 {
		t.Fatalf("Lookup(vfs_read) = %d, %v, %v", id, o, err)
	}
	if _, _, err := Lookup(KindFunc, "vfs_read", "no_such_module_bpfkit"); !errors.Is(err,
		ErrNotFound) {
		t.Fatalf("Lookup in a module that is not loaded: %v", err)
	}
	if !errors.Is(ErrNoKernelBTF, sys.ErrNotSupported) {
		t.Error("ErrNoKernelBTF does not wrap sys.ErrNotSupported")
	}
}

// TestAdversarialLookup: hostile kinds, names and module names are
// errors, never a panic, and leave no fd or mapping behind.
func TestAdversarialLookup(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	if _, err := os.Stat(VmlinuxPath); err != nil {
		t.Skip(err)
	}
	for _, c := range []struct {
		kind         Kind
		name, module string
	}{
		{0, "vfs_read", ""}, {255, "vfs_read", ""}, {KindFunc, "", ""}, {KindFunc, "vfs\x00read",
			""},
		{KindFunc, string(make([]byte, 1<<20)), ""}, {KindFunc, "vfs_read", "a\x00b"},
		{KindFunc, "vfs_read", "../../etc/passwd"}, {KindTypedef, "vfs_read", ""},
	} {
		id, o, err := Lookup(c.kind, c.name, c.module)
		if !errors.Is(err, ErrNotFound) || o != nil || id != 0 {
			t.Errorf("Lookup(%d, %.20q, %q) = %d, %v, %v, want ErrNotFound", c.kind, c.name,
				c.module, id, o, err)
		}
	}
}

// TestVmlinuxJournal: mapping the kernel's BTF is journaled, mmap and
// munmap, where the kernel lets it be mapped (6.16); before, the refused
// mmap is, and the file is read.
func TestVmlinuxJournal(t *testing.T) {
	fi, err := os.Stat(VmlinuxPath)
	if err != nil {
		t.Skip(err)
	}
	var journal strings.Builder
	sys.SetJournal(&journal)
	v, err := Vmlinux()
	if err != nil {
		sys.SetJournal(nil)
		t.Fatal(err)
	}
	mapped := v.mem != nil
	err = v.Close()
	sys.SetJournal(nil)
	if err != nil {
		t.Fatal(err)
	}
	j := journal.String()
	tried := strings.Contains(j, fmt.Sprintf("mmap(NULL, %d, PROT_READ, MAP_PRIVATE, ", fi.Size()))
	if !tried || mapped != strings.Contains(j, "munmap(") || mapped == strings.Contains(j,
		") = -1 ") {
		t.Fatalf("mapped %v; journal:\n%s", mapped, j)
	}
	t.Logf("mapped %v:\n%s", mapped, journal.String())
}
