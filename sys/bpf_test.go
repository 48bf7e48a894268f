package sys_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// cstr and objName are sys.StringPointer and sys.NewObjName for strings
// known to be valid.
func cstr(s string) sys.Pointer {
	p, err := sys.StringPointer(s)
	if err != nil {
		panic(err)
	}
	return p
}

func objName(s string) sys.ObjName {
	n, err := sys.NewObjName(s)
	if err != nil {
		panic(err)
	}
	return n
}

func TestMain(m *testing.M) { os.Exit(testutil.LeakMain(m)) }

// retZero is "r0 = 0; exit" in raw bytes: sys knows no instruction set.
var retZero = []byte{0xb7, 0, 0, 0, 0, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0}

func createMap(t *testing.T, typ, key, value, max uint32) int {
	t.Helper()
	fd, err := sys.MapCreate(&sys.MapCreateAttr{MapType: typ, KeySize: key, ValueSize: value, MaxEntries: max, MapName: objName("systest")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func loadProg(t testing.TB, typ uint32, code []byte) int {
	t.Helper()
	attr := sys.ProgLoadAttr{ProgType: typ, InsnCnt: uint32(len(code) / 8), Insns: sys.SlicePointer(code),
		License: cstr("GPL"), ProgName: objName("systest")}
	fd, err := sys.ProgLoad(&attr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func elem(fd int, key, value unsafe.Pointer, flags uint64) *sys.MapElemAttr {
	return &sys.MapElemAttr{MapFD: uint32(fd), Key: sys.NewPointer(key), Value: sys.NewPointer(value), Flags: flags}
}

func TestMapCommands(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	fd := createMap(t, unix.BPF_MAP_TYPE_HASH, 4, 8, 16)
	for k := uint32(1); k <= 5; k++ {
		v := uint64(k) * 100
		if err := sys.MapUpdateElem(elem(fd, unsafe.Pointer(&k), unsafe.Pointer(&v), unix.BPF_NOEXIST)); err != nil {
			t.Fatal(err)
		}
	}
	k, v := uint32(3), uint64(0)
	if err := sys.MapLookupElem(elem(fd, unsafe.Pointer(&k), unsafe.Pointer(&v), 0)); err != nil || v != 300 {
		t.Fatalf("lookup 3 = %d, %v", v, err)
	}
	if err := sys.MapUpdateElem(elem(fd, unsafe.Pointer(&k), unsafe.Pointer(&v), unix.BPF_NOEXIST)); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("BPF_NOEXIST on an existing key: %v, want EEXIST", err)
	}
	if err := sys.MapDeleteElem(elem(fd, unsafe.Pointer(&k), nil, 0)); err != nil {
		t.Fatal(err)
	}
	err := sys.MapLookupElem(elem(fd, unsafe.Pointer(&k), unsafe.Pointer(&v), 0))
	if !errors.Is(err, unix.ENOENT) || !strings.Contains(err.Error(), "BPF_MAP_LOOKUP_ELEM") {
		t.Fatalf("lookup of a deleted key: %v, want BPF_MAP_LOOKUP_ELEM ... ENOENT", err)
	}
	// Walk with GET_NEXT_KEY from a nil key: 4 keys remain.
	var keys []uint32
	var next uint32
	for prev := unsafe.Pointer(nil); ; prev = unsafe.Pointer(&keys[len(keys)-1]) {
		if err := sys.MapGetNextKey(elem(fd, prev, unsafe.Pointer(&next), 0)); errors.Is(err, unix.ENOENT) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, next)
	}
	if len(keys) != 4 {
		t.Fatalf("iterated keys %v, want 4 of them", keys)
	}
	// Batch lookup reads all four at once.
	bkeys, bvals := make([]uint32, 16), make([]uint64, 16)
	var out uint32
	batch := sys.MapBatchAttr{MapFD: uint32(fd), OutBatch: sys.NewPointer(unsafe.Pointer(&out)), Count: 16,
		Keys: sys.NewPointer(unsafe.Pointer(&bkeys[0])), Values: sys.NewPointer(unsafe.Pointer(&bvals[0]))}
	if err := sys.MapLookupBatch(&batch); err != nil && !errors.Is(err, unix.ENOENT) {
		t.Fatal(err)
	}
	if batch.Count != 4 {
		t.Fatalf("batch returned %d elements, want 4", batch.Count)
	}
	for i := range batch.Count {
		if bvals[i] != uint64(bkeys[i])*100 {
			t.Errorf("batch: key %d value %d", bkeys[i], bvals[i])
		}
	}
	// Lookup-and-delete (hash maps since 5.14).
	k = 5
	if err := sys.MapLookupAndDeleteElem(elem(fd, unsafe.Pointer(&k), unsafe.Pointer(&v), 0)); err != nil || v != 500 {
		t.Fatalf("lookup-and-delete 5 = %d, %v", v, err)
	}
	if err := sys.MapLookupElem(elem(fd, unsafe.Pointer(&k), unsafe.Pointer(&v), 0)); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("key 5 still there after lookup-and-delete: %v", err)
	}
	// Freeze: user space may no longer write.
	if err := sys.MapFreeze(elem(fd, nil, nil, 0)); err != nil {
		t.Fatal(err)
	}
	k = 1
	if err := sys.MapUpdateElem(elem(fd, unsafe.Pointer(&k), unsafe.Pointer(&v), 0)); !errors.Is(err, unix.EPERM) {
		t.Fatalf("update of a frozen map: %v, want EPERM", err)
	}
	var info sys.MapInfo
	if err := sys.InfoByFD(fd, &info); err != nil {
		t.Fatal(err)
	}
	if info.Type != unix.BPF_MAP_TYPE_HASH || info.KeySize != 4 || info.ValueSize != 8 || info.MaxEntries != 16 || info.Name.String() != "systest" || info.ID == 0 {
		t.Fatalf("map info %+v", info)
	}
}

// TestMapElemNoSleep runs the element commands without the runtime's
// syscall bookkeeping.
func TestMapElemNoSleep(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	fd := createMap(t, unix.BPF_MAP_TYPE_HASH, 4, 8, 4)
	k, v, got := uint32(7), uint64(49), uint64(0)
	if err := sys.MapUpdateElemNoSleep(elem(fd, unsafe.Pointer(&k), unsafe.Pointer(&v), 0)); err != nil {
		t.Fatal(err)
	}
	if err := sys.MapLookupElemNoSleep(elem(fd, unsafe.Pointer(&k), unsafe.Pointer(&got), 0)); err != nil || got != 49 {
		t.Fatalf("lookup = %d, %v", got, err)
	}
	var next uint32
	if err := sys.MapGetNextKeyNoSleep(elem(fd, nil, unsafe.Pointer(&next), 0)); err != nil || next != 7 {
		t.Fatalf("first key = %d, %v", next, err)
	}
	if err := sys.MapDeleteElemNoSleep(elem(fd, unsafe.Pointer(&k), nil, 0)); err != nil {
		t.Fatal(err)
	}
	if err := sys.MapLookupElemNoSleep(elem(fd, unsafe.Pointer(&k), unsafe.Pointer(&got), 0)); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("lookup after delete: %v", err)
	}
}

func TestProgLoadTestRunInfo(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	// r0 = 42; exit
	fd := loadProg(t, unix.BPF_PROG_TYPE_SOCKET_FILTER, []byte{0xb7, 0, 0, 0, 42, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0})
	pkt := make([]byte, 64)
	run := sys.TestRunAttr{ProgFD: uint32(fd), DataIn: sys.SlicePointer(pkt), DataSizeIn: 64, Repeat: 3}
	if err := sys.ProgTestRun(&run); err != nil {
		t.Fatal(err)
	}
	if run.Retval != 42 {
		t.Fatalf("retval %d, want 42", run.Retval)
	}
	var info sys.ProgInfo
	xlated := make([]byte, 64)
	info.XlatedProgLen, info.XlatedProgInsns = uint32(len(xlated)), sys.SlicePointer(xlated)
	if err := sys.InfoByFD(fd, &info); err != nil {
		t.Fatal(err)
	}
	if info.Type != unix.BPF_PROG_TYPE_SOCKET_FILTER || info.Name.String() != "systest" || info.ID == 0 || info.XlatedProgLen != 16 {
		t.Fatalf("prog info %+v", info)
	}
	if !bytes.Equal(xlated[:16], []byte{0xb7, 0, 0, 0, 42, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0}) {
		t.Fatalf("xlated % x", xlated[:16])
	}
	// The id walks and fd-by-id commands find the program and a map.
	found := false
	for id := uint32(0); ; {
		a := sys.GetIDAttr{ID: id}
		if err := sys.ProgGetNextID(&a); errors.Is(err, unix.ENOENT) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		id = a.NextID
		found = found || id == info.ID
	}
	if !found {
		t.Fatalf("BPF_PROG_GET_NEXT_ID never returned id %d", info.ID)
	}
	fd2, err := sys.ProgGetFDByID(&sys.GetIDAttr{ID: info.ID})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd2)
	var info2 sys.ProgInfo
	if err := sys.InfoByFD(fd2, &info2); err != nil || info2.ID != info.ID || info2.Tag != info.Tag {
		t.Fatalf("prog by id: %+v %v", info2, err)
	}
	mfd := createMap(t, unix.BPF_MAP_TYPE_ARRAY, 4, 4, 1)
	var minfo sys.MapInfo
	if err := sys.InfoByFD(mfd, &minfo); err != nil {
		t.Fatal(err)
	}
	a := sys.GetIDAttr{ID: minfo.ID - 1}
	if err := sys.MapGetNextID(&a); err != nil || a.NextID != minfo.ID {
		t.Fatalf("map next id after %d: %d, %v", minfo.ID-1, a.NextID, err)
	}
	mfd2, err := sys.MapGetFDByID(&sys.GetIDAttr{ID: minfo.ID})
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(mfd2)
}

func TestPinGet(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	dir := testutil.BPFFS(t)
	fd := createMap(t, unix.BPF_MAP_TYPE_ARRAY, 4, 8, 4)
	path := filepath.Join(dir, "m")
	if err := sys.ObjPin(&sys.ObjAttr{Pathname: cstr(path), BPFFD: uint32(fd)}); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	fd2, err := sys.ObjGet(&sys.ObjAttr{Pathname: cstr(path)})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd2)
	var a, b sys.MapInfo
	sys.InfoByFD(fd, &a)
	sys.InfoByFD(fd2, &b)
	if a.ID == 0 || a.ID != b.ID {
		t.Fatalf("pinned map id %d, opened %d", a.ID, b.ID)
	}
	_, err = sys.ObjGet(&sys.ObjAttr{Pathname: cstr(filepath.Join(dir, "absent"))})
	if !errors.Is(err, unix.ENOENT) {
		t.Fatalf("BPF_OBJ_GET of a missing path: %v", err)
	}
}

// TestPerfEventLinkStats attaches a perf_event program to a software clock
// event twice, through PERF_EVENT_IOC_SET_BPF and through a BPF perf link,
// and checks with BPF_ENABLE_STATS that it runs.
func TestPerfEventLinkStats(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	statsFD, err := sys.EnableStats(&sys.EnableStatsAttr{Type: unix.BPF_STATS_RUN_TIME})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(statsFD)
	prog := loadProg(t, unix.BPF_PROG_TYPE_PERF_EVENT, retZero)
	runCount := func() uint64 {
		var info sys.ProgInfo
		if err := sys.InfoByFD(prog, &info); err != nil {
			t.Fatal(err)
		}
		return info.RunCnt
	}
	open := func() int {
		attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK, Sample: 100000, Bits: unix.PerfBitDisabled}
		fd, err := sys.PerfEventOpen(&attr, 0, -1, -1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC == 0 {
			t.Error("perf event fd is not close-on-exec")
		}
		return fd
	}
	spin := func() {
		for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	pfd := open()
	defer unix.Close(pfd)
	if err := sys.PerfEventSetBPF(pfd, prog); err != nil {
		t.Fatal(err)
	}
	if err := sys.PerfEventEnable(pfd); err != nil {
		t.Fatal(err)
	}
	spin()
	if err := sys.PerfEventDisable(pfd); err != nil {
		t.Fatal(err)
	}
	n1 := runCount()
	spin()
	if n1 == 0 || runCount() != n1 {
		t.Fatalf("ioctl attach: %d runs while enabled, %d after disable", n1, runCount()-n1)
	}

	pfd2 := open()
	defer unix.Close(pfd2)
	lfd, err := sys.LinkCreate(&sys.LinkCreateAttr{ProgFD: uint32(prog), TargetFD: uint32(pfd2), AttachType: unix.BPF_PERF_EVENT, Cookie: 0xc0ffee})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(lfd)
	sys.PerfEventEnable(pfd2)
	spin()
	n2 := runCount()
	if n2 == n1 {
		t.Fatal("perf link: the program did not run")
	}
	var li sys.LinkInfo
	if err := sys.InfoByFD(lfd, &li); err != nil || li.ProgID == 0 {
		t.Fatalf("link info %+v, %v", li, err)
	}
	a := sys.GetIDAttr{ID: li.ID}
	l2, err := sys.LinkGetFDByID(&a)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(l2)
	a = sys.GetIDAttr{ID: li.ID - 1}
	if err := sys.LinkGetNextID(&a); err != nil || a.NextID != li.ID {
		t.Fatalf("link next id: %d %v", a.NextID, err)
	}
	unix.Close(lfd)
	n3 := runCount()
	spin()
	if runCount() != n3 {
		t.Fatal("the program still runs after its perf link is closed")
	}
}

// TestCgroupLinkDetach creates a cgroup link and detaches it with
// BPF_LINK_DETACH (perf and tracing links do not support detaching).
func TestCgroupLinkDetach(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	cg, err := unix.Open(testutil.Cgroup2(t), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(cg)
	// r0 = 1; exit: let every packet through.
	prog := loadProg(t, unix.BPF_PROG_TYPE_CGROUP_SKB, []byte{0xb7, 0, 0, 0, 1, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0})
	lfd, err := sys.LinkCreate(&sys.LinkCreateAttr{ProgFD: uint32(prog), TargetFD: uint32(cg), AttachType: unix.BPF_CGROUP_INET_INGRESS})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(lfd)
	attached := func() uint32 {
		q := sys.ProgQueryAttr{TargetFD: uint32(cg), AttachType: unix.BPF_CGROUP_INET_INGRESS}
		if err := sys.ProgQuery(&q); err != nil {
			t.Fatal(err)
		}
		return q.ProgCnt
	}
	if n := attached(); n != 1 {
		t.Fatalf("%d programs attached to the cgroup, want 1", n)
	}
	if err := sys.LinkDetach(&sys.LinkDetachAttr{LinkFD: uint32(lfd)}); err != nil {
		t.Fatal(err)
	}
	if n := attached(); n != 0 {
		t.Fatalf("%d programs attached after BPF_LINK_DETACH, want 0", n)
	}
}

func TestRawTracepointOpen(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	prog := loadProg(t, unix.BPF_PROG_TYPE_RAW_TRACEPOINT, retZero)
	fd, err := sys.RawTracepointOpen(&sys.RawTracepointAttr{Name: cstr("sys_enter"), ProgFD: uint32(prog)})
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	_, err = sys.RawTracepointOpen(&sys.RawTracepointAttr{Name: cstr("no_such_tracepoint"), ProgFD: uint32(prog)})
	if !errors.Is(err, unix.ENOENT) {
		t.Fatalf("unknown raw tracepoint: %v, want ENOENT", err)
	}
}

// TestFDHygiene: with fds 0-2 closed, new BPF fds still land above 2, and
// every BPF fd is close-on-exec. The fcntl that moves one is journaled.
func TestFDHygiene(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	var journal bytes.Buffer
	sys.SetJournal(&journal)
	defer sys.SetJournal(nil)
	var saved [3]int
	for i := range saved {
		var err error
		if saved[i], err = unix.FcntlInt(uintptr(i), unix.F_DUPFD_CLOEXEC, 10); err != nil {
			t.Fatal(err)
		}
	}
	for i := range saved {
		unix.Close(i)
	}
	mfd, merr := sys.MapCreate(&sys.MapCreateAttr{MapType: unix.BPF_MAP_TYPE_ARRAY, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	pfd, perr := sys.ProgLoad(&sys.ProgLoadAttr{ProgType: unix.BPF_PROG_TYPE_SOCKET_FILTER, InsnCnt: 2, Insns: sys.SlicePointer(retZero), License: cstr("GPL")})
	_, free0 := unix.FcntlInt(0, unix.F_GETFD, 0)
	for i := range saved {
		unix.Dup3(saved[i], i, 0)
		unix.Close(saved[i])
	}
	if merr != nil || perr != nil {
		t.Fatal(merr, perr)
	}
	defer unix.Close(mfd)
	defer unix.Close(pfd)
	if free0 == nil {
		t.Error("fd 0 was left in use")
	}
	// A load the verifier abandoned with EAGAIN (a signal was pending: Go's
	// preemption, under load) is tried again, and journaled each time.
	want := fmt.Sprintf(`(?m)^bpf\(BPF_MAP_CREATE, .*\) = 0 <.*>\nfcntl\(0, F_DUPFD_CLOEXEC, 3\) = %d <.*>\n`+
		`(bpf\(BPF_PROG_LOAD, .*\) = -1 EAGAIN .*\n)*`+
		`bpf\(BPF_PROG_LOAD, .*\) = 0 <.*>\nfcntl\(0, F_DUPFD_CLOEXEC, 3\) = %d <`, mfd, pfd)
	if !regexp.MustCompile(want).MatchString(journal.String()) {
		t.Errorf("journal does not match %s:\n%s", want, journal.String())
	}
	for _, fd := range []int{mfd, pfd} {
		if fd <= 2 {
			t.Errorf("BPF object on fd %d", fd)
		}
		if flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("fd %d is not close-on-exec", fd)
		}
	}
}

// TestEPERMNamesCapability drops CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN from
// one locked thread and checks the error says which capability is missing.
func TestEPERMNamesCapability(t *testing.T) {
	testutil.RequireRoot(t)
	// A finite RLIMIT_MEMLOCK is named too: kernels before 5.11 charge it.
	var rl unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl)
	unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: 64 << 10, Max: rl.Max})
	defer unix.Setrlimit(unix.RLIMIT_MEMLOCK, &rl)
	var err, needErr error
	if err := sys.NeedCaps(sys.CAP_BPF, sys.CAP_PERFMON); err != nil {
		t.Fatalf("NeedCaps as root: %v", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread() // never unlocked: the thread dies with its capabilities dropped
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if e := unix.Capget(&hdr, &data[0]); e != nil {
			err = e
			return
		}
		data[0].Effective &^= 1 << sys.CAP_SYS_ADMIN
		data[1].Effective &^= 1<<(sys.CAP_BPF-32) | 1<<(sys.CAP_PERFMON-32)
		if e := unix.Capset(&hdr, &data[0]); e != nil {
			err = e
			return
		}
		needErr = sys.NeedCaps(sys.CAP_BPF, sys.CAP_PERFMON)
		_, err = sys.ProgLoad(&sys.ProgLoadAttr{ProgType: unix.BPF_PROG_TYPE_TRACEPOINT, InsnCnt: 2, Insns: sys.SlicePointer(retZero), License: cstr("GPL")})
	}()
	wg.Wait()
	if !errors.Is(needErr, unix.EPERM) || !strings.Contains(needErr.Error(), "missing CAP_BPF and CAP_PERFMON; run as root") {
		t.Fatalf("NeedCaps without them: %v", needErr)
	}
	if !errors.Is(err, unix.EPERM) {
		t.Fatalf("load without capabilities: %v, want EPERM", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "BPF_PROG_LOAD") || !strings.Contains(msg, "missing CAP_BPF and CAP_PERFMON") ||
		!strings.Contains(msg, "RLIMIT_MEMLOCK, here 64 KiB") {
		t.Fatalf("error does not name the command and missing capabilities: %s", msg)
	}
	t.Log(err)
}

// TestManyLoads loads 10,000 programs in a row while other goroutines keep
// the scheduler preempting (SIGURG): EAGAIN from the verifier must be retried.
func TestManyLoads(t *testing.T) {
	testutil.RequireRoot(t)
	if testing.Short() {
		t.Skip("-short")
	}
	testutil.CheckNoLeaks(t)
	// 200 instructions of arithmetic keep the verifier busy long enough for signals to land.
	var code []byte
	for range 199 {
		code = append(code, 0x07, 0, 0, 0, 1, 0, 0, 0) // r0 += 1
	}
	code = append([]byte{0xb7, 0, 0, 0, 0, 0, 0, 0}, append(code, 0x95, 0, 0, 0, 0, 0, 0, 0)...)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x := 0; ; x++ {
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	attr := sys.ProgLoadAttr{ProgType: unix.BPF_PROG_TYPE_SOCKET_FILTER, InsnCnt: uint32(len(code) / 8), Insns: sys.SlicePointer(code), License: cstr("GPL")}
	for i := range 10000 {
		fd, err := sys.ProgLoad(&attr)
		if err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
		unix.Close(fd)
	}
}

func TestJournal(t *testing.T) {
	testutil.RequireRoot(t)
	var buf bytes.Buffer
	sys.SetJournal(&buf)
	fd, err := sys.MapCreate(&sys.MapCreateAttr{MapType: unix.BPF_MAP_TYPE_HASH, KeySize: 8, ValueSize: 8, MaxEntries: 4096, MapName: objName("drops")})
	if err != nil {
		sys.SetJournal(nil)
		t.Fatal(err)
	}
	k, v := uint64(1), uint64(0)
	sys.MapLookupElem(elem(fd, unsafe.Pointer(&k), unsafe.Pointer(&v), 0))
	pfd, _ := sys.ProgLoad(&sys.ProgLoadAttr{ProgType: unix.BPF_PROG_TYPE_SOCKET_FILTER, InsnCnt: 2, Insns: sys.SlicePointer(retZero), License: cstr("GPL"), ProgName: objName("ret0")})
	sys.SetJournal(nil)
	unix.Close(fd)
	unix.Close(pfd)
	sys.MapLookupElem(elem(fd, unsafe.Pointer(&k), unsafe.Pointer(&v), 0)) // not journaled
	want := []string{
		fmt.Sprintf(`^bpf\(BPF_MAP_CREATE, map_type=hash key_size=8 value_size=8 max_entries=4096 map_flags=0x0 name="drops"\) = %d <[0-9.]+[µm]?s>$`, fd),
		fmt.Sprintf(`^bpf\(BPF_MAP_LOOKUP_ELEM, map_fd=%d flags=0x0\) = -1 ENOENT \(no such file or directory\) <[0-9.]+[µm]?s>$`, fd),
		fmt.Sprintf(`^bpf\(BPF_PROG_LOAD, prog_type=socket_filter insn_cnt=2 license="GPL" name="ret0" kern_version=0x0 prog_flags=0x0 log_level=0\) = %d <[0-9.]+[µm]?s>$`, pfd),
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("journal has %d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, re := range want {
		if !regexp.MustCompile(re).MatchString(lines[i]) {
			t.Errorf("journal line %d:\n%s\nwant match for\n%s", i, lines[i], re)
		}
	}
}

// TestJournalEnv runs this test binary again with BPFKIT_JOURNAL set to a
// file and checks the child's calls land there, also while the program
// sets a journal of its own (cmd/example does: its calls were lost), and
// after it unsets it.
func TestJournalEnv(t *testing.T) {
	testutil.RequireRoot(t)
	if os.Getenv("BPFKIT_JOURNAL") != "" {
		var own bytes.Buffer
		sys.SetJournal(&own)
		createMap(t, unix.BPF_MAP_TYPE_ARRAY, 4, 4, 1)
		sys.SetJournal(nil)
		createMap(t, unix.BPF_MAP_TYPE_ARRAY, 4, 4, 2)
		if !strings.Contains(own.String(), "max_entries=1 ") || strings.Contains(own.String(), "max_entries=2 ") {
			t.Fatalf("the program's own journal:\n%s", own.String())
		}
		return
	}
	path := filepath.Join(t.TempDir(), "journal")
	cmd := exec.Command(os.Args[0], "-test.run=^TestJournalEnv$")
	cmd.Env = append(os.Environ(), "BPFKIT_JOURNAL="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got, _ := os.ReadFile(path)
	for _, n := range []string{"1", "2"} {
		if !regexp.MustCompile(`(?m)^bpf\(BPF_MAP_CREATE, map_type=array key_size=4 value_size=4 max_entries=` + n + ` .*\) = \d+ <`).Match(got) {
			t.Fatalf("journal file lacks the map of %s entries:\n%s", n, got)
		}
	}
}

// TestBTFObjects walks the kernel's BTF objects: the first is vmlinux's,
// kernel_btf set, and its raw BTF from BPF_OBJ_GET_INFO_BY_FD is the file
// /sys/kernel/btf/vmlinux byte for byte.
func TestBTFObjects(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	file, err := os.ReadFile("/sys/kernel/btf/vmlinux")
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	var journal bytes.Buffer
	sys.SetJournal(&journal)
	defer sys.SetJournal(nil)
	found := false
	for a := (sys.GetIDAttr{}); !found; a.ID = a.NextID {
		if err := sys.BTFGetNextID(&a); err != nil {
			t.Fatalf("no BTF object named vmlinux: %v", err)
		}
		fd, err := sys.BTFGetFDByID(&sys.GetIDAttr{ID: a.NextID})
		if errors.Is(err, unix.ENOENT) { // freed meanwhile
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		name := make([]byte, 64)
		info := sys.BTFInfo{Name: sys.SlicePointer(name), NameLen: uint32(len(name))}
		err = sys.InfoByFD(fd, &info)
		if err == nil && unix.ByteSliceToString(name) == "vmlinux" && info.KernelBTF == 1 {
			found = true
			raw := make([]byte, info.BTFSize)
			info = sys.BTFInfo{BTF: sys.SlicePointer(raw), BTFSize: uint32(len(raw))}
			err = sys.InfoByFD(fd, &info)
			if err == nil && (info.ID != a.NextID || !bytes.Equal(raw, file)) {
				t.Errorf("BTF object %d (info id %d): %d bytes, the file %d, equal %v",
					a.NextID, info.ID, len(raw), len(file), bytes.Equal(raw, file))
			}
		}
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, line := range []string{"bpf(BPF_BTF_GET_NEXT_ID, id=0) = 0",
		"bpf(BPF_BTF_GET_FD_BY_ID, id="} {
		if !strings.Contains(journal.String(), line) {
			t.Errorf("journal lacks %q:\n%s", line, journal.String())
		}
	}
}

// TestTracingJournal: the journal names what a tracing program's load and
// attach carry: attach_btf_id and its object, the link's target_btf_id and
// tracing cookie (not perf_event's), BPF_RAW_TRACEPOINT_OPEN's NULL name.
func TestTracingJournal(t *testing.T) {
	testutil.RequireRoot(t)
	var journal bytes.Buffer
	sys.SetJournal(&journal)
	defer sys.SetJournal(nil)
	code := retZero
	attr := sys.ProgLoadAttr{ProgType: unix.BPF_PROG_TYPE_TRACING, InsnCnt: uint32(len(code) / 8),
		Insns: sys.SlicePointer(code), License: cstr("GPL"),
		ExpectedAttachType: unix.BPF_TRACE_FENTRY, AttachBTFID: 1, AttachProgFD: 0}
	if fd, err := sys.ProgLoad(&attr); err == nil {
		unix.Close(fd)
		t.Fatal("a tracing program loaded for BTF type 1, which is no function")
	}
	_, err := sys.LinkCreateTracing(&sys.LinkCreateTracingAttr{ProgFD: ^uint32(0),
		AttachType:  unix.BPF_TRACE_FEXIT,
		TargetBTFID: 7, Cookie: 0xc0ffee})
	wantErrno(t, "LinkCreateTracing of prog fd -1", err, unix.EBADF)
	_, err = sys.RawTracepointOpen(&sys.RawTracepointAttr{ProgFD: ^uint32(0)})
	wantErrno(t, "RawTracepointOpen with no name of prog fd -1", err, unix.EBADF)
	for _, line := range []string{
		"prog_type=tracing insn_cnt=2 ",
		" expected_attach_type=trace_fentry attach_btf_id=1 attach_btf_obj_fd=0) = -1 ",
		"bpf(BPF_LINK_CREATE, prog_fd=4294967295 target_fd=0 attach_type=trace_fexit flags=0x0 " +
			"target_btf_id=7 cookie=0xc0ffee) = -1 EBADF",
		"bpf(BPF_RAW_TRACEPOINT_OPEN, name=NULL prog_fd=4294967295) = -1 EBADF",
	} {
		if !strings.Contains(journal.String(), line) {
			t.Errorf("journal lacks %q:\n%s", line, journal.String())
		}
	}
}

func wantErrno(t *testing.T, what string, err error, errno unix.Errno) {
	t.Helper()
	if !errors.Is(err, errno) {
		t.Errorf("%s: %v, want %v", what, err, errno)
	}
}
