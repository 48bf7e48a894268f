package tests

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// bpfkit's facts are checked against what the test made (on every kernel)
// and against bpftool's JSON for the same objects (Debian's bpftool, on
// the host: the VMs have none).

// bpfkitJSON runs bpfkit with -json and decodes its lines.
func bpfkitJSON(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	out, errOut, status := runTool(t, "bpfkit", append(args, "-json")...)
	if status != 0 {
		t.Fatalf("bpfkit %s: exit %d: %s", strings.Join(args, " "), status, errOut)
	}
	var recs []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("bpfkit %s: line %q: %v", strings.Join(args, " "), line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// bpftoolJSON runs bpftool -j args into v; false when there is no bpftool.
func bpftoolJSON(t *testing.T, v any, args ...string) bool {
	t.Helper()
	path, err := exec.LookPath("bpftool")
	if err != nil {
		t.Logf("no bpftool on PATH (Debian package bpftool): no comparison with it")
		return false
	}
	out, err := exec.Command(path, append([]string{"-j"}, args...)...).Output()
	if err != nil {
		t.Fatalf("bpftool %s: %v", strings.Join(args, " "), err)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("bpftool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return true
}

// byID picks the record whose field is id.
func byID(recs []map[string]any, field string, id uint32) map[string]any {
	for _, r := range recs {
		if r[field] == float64(id) {
			return r
		}
	}
	return nil
}

// sameFields fails for each field that a and b do not both have alike.
func sameFields(t *testing.T, what string, a, b map[string]any, fields ...string) {
	t.Helper()
	for _, f := range fields {
		if !reflect.DeepEqual(a[f], b[f]) {
			t.Errorf("%s: %s is %v in bpfkit, %v in bpftool", what, f, a[f], b[f])
		}
	}
}

// holdsUs checks that the record's pids list this process.
func holdsUs(t *testing.T, what string, r map[string]any) {
	t.Helper()
	comm, _ := os.ReadFile("/proc/self/comm")
	want := map[string]any{"pid": float64(os.Getpid()), "comm": strings.TrimSpace(string(comm))}
	ps, _ := r["pids"].([]any)
	for _, p := range ps {
		if reflect.DeepEqual(p, want) {
			return
		}
	}
	t.Errorf("%s: pids %v, want %v among them", what, r["pids"], want)
}

// bkObjects loads what the tests inspect: a hash map with two entries, a
// per-CPU array with a value per CPU, and a socket filter that uses the
// hash map, test-run 7 times with statistics on.
func bkObjects(t *testing.T) (*mapfd.Map, *mapfd.Map, *prog.Program, *prog.Info) {
	t.Helper()
	h, err := mapfd.Create(mapfd.Spec{Type: mapfd.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 16, Name: "bk_hash"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	pc, err := mapfd.Create(mapfd.Spec{Type: mapfd.PerCPUArray, KeySize: 4, ValueSize: 4, MaxEntries: 2, Name: "bk_pcpu"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	for k, v := range map[uint32]uint64{1: 0x0807060504030201, 7: 42} {
		if err := h.Update(binary.LittleEndian.AppendUint32(nil, k), binary.LittleEndian.AppendUint64(nil, v), 0); err != nil {
			t.Fatal(err)
		}
	}
	vals := make([]byte, pc.ValueSize())
	for cpu := 0; cpu*8 < len(vals); cpu++ {
		vals[cpu*8] = byte(cpu + 1)
	}
	if err := pc.Update(binary.LittleEndian.AppendUint32(nil, 1), vals, 0); err != nil {
		t.Fatal(err)
	}
	p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "bk_prog", License: "GPL", Insns: []Item{
		StoreImm(BPF_W, R10, -4, 1), LoadMapFD(R1, h), Mov64Reg(R2, R10), ALU64Imm(BPF_ADD, R2, -4),
		Call(BPF_FUNC_map_lookup_elem), JumpImm(BPF_JEQ, R0, 0, "out"), LoadMem(BPF_DW, R0, R0, 0),
		Label("out"), Call(BPF_FUNC_ktime_get_ns), Mov64Imm(R0, 0), Exit()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	stats, err := sys.EnableStats(&sys.EnableStatsAttr{Type: 0}) // BPF_STATS_RUN_TIME
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.TestRun(prog.RunOptions{Data: make([]byte, 64), Repeat: 7})
	unix.Close(stats)
	if err != nil {
		t.Fatal(err)
	}
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	return h, pc, p, info
}

// TestBpfkitProgs: prog list and prog show say what the test loaded: type,
// name, tag, uid, maps, the 7 runs counted, when it was loaded, and that
// this process holds it; as bpftool says.
func TestBpfkitProgs(t *testing.T) {
	testutil.RequireRoot(t)
	before := time.Now().Unix()
	h, _, p, info := bkObjects(t)
	hi, _ := h.Info()
	r := byID(bpfkitJSON(t, "prog", "list"), "id", info.ID)
	if r == nil {
		t.Fatalf("prog list has no program %d", info.ID)
	}
	want := map[string]any{"id": float64(info.ID), "type": "socket_filter", "name": "bk_prog", "tag": info.Tag, "uid": float64(0),
		"map_ids": []any{float64(hi.ID)}, "run_cnt": float64(7)}
	for k, v := range want {
		if !reflect.DeepEqual(r[k], v) {
			t.Errorf("prog list: %s is %v, want %v", k, r[k], v)
		}
	}
	if at := int64(r["loaded_at"].(float64)); at < before-1 || at > time.Now().Unix()+1 {
		t.Errorf("loaded_at %d, want between %d and now", at, before)
	}
	if r["run_time_ns"] == nil || r["run_time_ns"].(float64) <= 0 {
		t.Errorf("run_time_ns %v with statistics on", r["run_time_ns"])
	}
	holdsUs(t, "prog list", r)
	pin := testutil.BPFFS(t) + "/bk_prog"
	if err := p.Pin(pin); err != nil {
		t.Fatal(err)
	}
	defer mapfd.Unpin(pin)
	// bpfkit's forms and bpftool's name the same program; a name or a
	// tag, that of another test's program too.
	id := fmt.Sprint(info.ID)
	for _, args := range [][]string{
		{"show", id},
		{"show", "id", id},
		{"list", "id", id},
		{"show", "tag", info.Tag},
		{"show", "name", "bk_prog"},
		{"show", "pinned", pin},
	} {
		show := bpfkitJSON(t, append([]string{"prog"}, args...)...)
		unique := args[1] != "tag" && args[1] != "name"
		if unique && len(show) != 1 || !reflect.DeepEqual(byID(show, "id", info.ID), r) {
			t.Errorf("prog %q: %v, prog list: %v", args, show, r)
		}
	}
	text, _, _ := runTool(t, "bpfkit", "prog", "show", fmt.Sprint(info.ID))
	for _, s := range []string{fmt.Sprintf("%d: socket_filter  name bk_prog  tag %s", info.ID, info.Tag), "run_cnt 7", fmt.Sprintf("map_ids %d", hi.ID),
		fmt.Sprintf("(%d)", os.Getpid())} {
		if !strings.Contains(text, s) {
			t.Errorf("prog show text lacks %q:\n%s", s, text)
		}
	}
	var bt []map[string]any
	if !bpftoolJSON(t, &bt, "prog", "list") {
		return
	}
	b := byID(bt, "id", info.ID)
	sameFields(t, "prog list", r, b, "id", "type", "name", "tag", "uid", "map_ids", "run_cnt", "run_time_ns")
	if d := r["loaded_at"].(float64) - b["loaded_at"].(float64); d < -1 || d > 1 {
		t.Errorf("loaded_at %v, bpftool %v", r["loaded_at"], b["loaded_at"])
	}
}

// TestBpfkitMaps: map list, map show and map dump say what the test made
// and wrote, per-CPU values CPU by CPU; as bpftool says.
func TestBpfkitMaps(t *testing.T) {
	testutil.RequireRoot(t)
	h, pc, _, _ := bkObjects(t)
	ncpu, _ := sys.PossibleCPUs()
	recs := bpfkitJSON(t, "map", "list")
	var bt []map[string]any
	haveBpftool := bpftoolJSON(t, &bt, "map", "list")
	for _, m := range []*mapfd.Map{h, pc} {
		i, _ := m.Info()
		r := byID(recs, "id", i.ID)
		want := map[string]any{"id": float64(i.ID), "type": m.Type().String(), "name": m.Name(), "flags": float64(0),
			"bytes_key": float64(4), "bytes_value": float64(map[bool]int{true: 4, false: 8}[m.Type().PerCPU()]),
			"max_entries": float64(m.MaxEntries())}
		for k, v := range want {
			if r == nil || !reflect.DeepEqual(r[k], v) {
				t.Errorf("map list, map %d: %s is %v, want %v", i.ID, k, r[k], v)
			}
		}
		holdsUs(t, "map list", r)
		id := fmt.Sprint(i.ID)
		for _, args := range [][]string{{id}, {"id", id}, {"name", m.Name()}} {
			show := bpfkitJSON(t, append([]string{"map", "show"}, args...)...)
			unique := args[0] != "name" // another test's map may have the name too
			if unique && len(show) != 1 || !reflect.DeepEqual(byID(show, "id", i.ID), r) {
				t.Errorf("map show %q: %v, map list: %v", args, show, r)
			}
		}
		if haveBpftool {
			sameFields(t, "map list", r, byID(bt, "id", i.ID), "id", "type", "name", "flags", "bytes_key", "bytes_value", "max_entries")
		}
	}
	hi, _ := h.Info()
	hexes := func(b ...byte) []any {
		var out []any
		for _, c := range b {
			out = append(out, fmt.Sprintf("0x%02x", c))
		}
		return out
	}
	wantHash := []map[string]any{
		{"key": hexes(1, 0, 0, 0), "value": hexes(1, 2, 3, 4, 5, 6, 7, 8)},
		{"key": hexes(7, 0, 0, 0), "value": hexes(42, 0, 0, 0, 0, 0, 0, 0)},
	}
	pi, _ := pc.Info()
	var zero, ones []any
	for cpu := range ncpu {
		zero = append(zero, map[string]any{"cpu": float64(cpu), "value": hexes(0, 0, 0, 0)})
		ones = append(ones, map[string]any{"cpu": float64(cpu), "value": hexes(byte(cpu+1), 0, 0, 0)})
	}
	wantPCPU := []map[string]any{{"key": hexes(0, 0, 0, 0), "values": zero}, {"key": hexes(1, 0, 0, 0), "values": ones}}
	for _, c := range []struct {
		id   uint32
		want []map[string]any
	}{{hi.ID, wantHash}, {pi.ID, wantPCPU}} {
		got := bpfkitJSON(t, "map", "dump", "id", fmt.Sprint(c.id))
		key := func(a, b map[string]any) int { return strings.Compare(fmt.Sprint(a["key"]), fmt.Sprint(b["key"])) }
		slices.SortFunc(got, key)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("map dump %d:\n%v\nwant\n%v", c.id, got, c.want)
		}
		var b []map[string]any
		if bpftoolJSON(t, &b, "map", "dump", "id", fmt.Sprint(c.id)) {
			slices.SortFunc(b, key)
			if !reflect.DeepEqual(got, b) {
				t.Errorf("map dump %d:\n%v\nbpftool:\n%v", c.id, got, b)
			}
		}
	}
	text, _, _ := runTool(t, "bpfkit", "map", "dump", fmt.Sprint(hi.ID))
	if !strings.Contains(text, "key: 01 00 00 00  value: 01 02 03 04 05 06 07 08\n") || !strings.HasSuffix(text, "Found 2 elements\n") {
		t.Errorf("map dump text:\n%s", text)
	}
}

// TestBpfkitProgDump: prog dump prints the xlated instructions as bpftool
// prog dump xlated does: its text with and without opcodes, its JSON.
func TestBpfkitProgDump(t *testing.T) {
	testutil.RequireRoot(t)
	h, _, _, info := bkObjects(t)
	hi, _ := h.Info()
	id := fmt.Sprint(info.ID)
	text, _, status := runTool(t, "bpfkit", "prog", "dump", id)
	if status != 0 || text != info.Listing() {
		t.Errorf("prog dump %s: exit %d:\n%s\nListing:\n%s", id, status, text, info.Listing())
	}
	forms := [][]string{{"xlated", "id", id}, {"xlated", id}, {"id", id}}
	for _, args := range forms {
		got, errOut, _ := runTool(t, "bpfkit", append([]string{"prog", "dump"}, args...)...)
		if got != text {
			t.Errorf("prog dump %q:\n%s%s\nprog dump %s:\n%s", args, got, errOut, id, text)
		}
	}
	// Another bkObjects' program has the same tag: dump wants one.
	_, _, _, twin := bkObjects(t)
	_, errOut, status := runTool(t, "bpfkit", "prog", "dump", "tag", info.Tag)
	if status != 1 || !strings.Contains(errOut, fmt.Sprintf("%d", twin.ID)) ||
		!strings.Contains(errOut, "choose one by id") {
		t.Errorf("prog dump tag %s of two programs: exit %d, %s", info.Tag, status, errOut)
	}
	withOpcodes, _, _ := runTool(t, "bpfkit", "prog", "dump", "-opcodes", id)
	got, _, _ := runTool(t, "bpfkit", "prog", "dump", "xlated", "id", id, "opcodes")
	if got != withOpcodes {
		t.Errorf("prog dump xlated id %s opcodes:\n%s\nprog dump -opcodes %s:\n%s",
			id, got, id, withOpcodes)
	}
	dump := bpfkitJSON(t, "prog", "dump", id)
	if len(dump) != len(info.Xlated)-1 || dump[1]["disasm"] != fmt.Sprintf("(18) r1 = map[id:%d]", hi.ID) {
		t.Errorf("prog dump -json: %d lines for %d instructions (one ld_imm64), the second %v", len(dump), len(info.Xlated), dump[1])
	}
	ops := bpfkitJSON(t, "prog", "dump", "-opcodes", id)
	if op, _ := ops[len(ops)-1]["opcodes"].(map[string]any); op["code"] != "0x95" || len(ops) != len(dump) {
		t.Errorf("prog dump -opcodes -json: last %v", ops[len(ops)-1])
	}
	bpftool, err := exec.LookPath("bpftool")
	if err != nil {
		t.Logf("no bpftool on PATH (Debian package bpftool): no comparison with it")
		return
	}
	for _, opcodes := range []bool{false, true} {
		args, want := []string{"prog", "dump", id}, []string{"prog", "dump", "xlated", "id", id}
		if opcodes {
			args, want = append(args, "-opcodes"), append(want, "opcodes")
		}
		got, _, _ := runTool(t, "bpfkit", args...)
		out, err := exec.Command(bpftool, want...).Output()
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimRight(got, "\n") != strings.TrimRight(string(out), "\n") {
			t.Errorf("bpfkit %s:\n%s\nbpftool %s:\n%s", strings.Join(args, " "), got, strings.Join(want, " "), out)
		}
		var b []map[string]any
		bpftoolJSON(t, &b, want...)
		if g := bpfkitJSON(t, args...); !reflect.DeepEqual(g, b) {
			t.Errorf("bpfkit %s -json:\n%v\nbpftool -j:\n%v", strings.Join(args, " "), g, b)
		}
	}
}

// TestBpfkitPerfAndLinks: perf list names the tracepoint, raw tracepoint,
// uprobe and (where the kernel has kprobes) kprobe the test attached, with
// this process and the program; link list the links; as bpftool does.
func TestBpfkitPerfAndLinks(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	load := func(typ prog.Type) *prog.Program {
		p, err := prog.Load(prog.Spec{Type: typ, Name: "bk_perf", License: "GPL", Insns: []Item{
			Mov64Imm(R0, 1), // keep the tracepoint's record for its other perf users
			Exit(),
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	attach := func(l *prog.Link, err error) *prog.Link {
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	id := func(p *prog.Program) float64 {
		i, err := p.Info()
		if err != nil {
			t.Fatal(err)
		}
		return float64(i.ID)
	}
	tp, raw, up := load(prog.Tracepoint), load(prog.RawTracepoint), load(prog.Kprobe)
	attach(prog.AttachTracepoint(tp, "syscalls", "sys_enter_getppid", prog.AttachOptions{}))
	rawLink := attach(prog.AttachRawTracepoint(raw, "sys_enter", prog.AttachOptions{}))
	exe, off := testutil.FuncOffset(t, uprobeTarget)
	attach(prog.AttachUprobe(up, exe, prog.UprobeOptions{Offset: off}))
	want := []map[string]any{
		{"prog_id": id(tp), "fd_type": "tracepoint", "tracepoint": "sys_enter_getppid"},
		{"prog_id": id(raw), "fd_type": "raw_tracepoint", "tracepoint": "sys_enter"},
		{"prog_id": id(up), "fd_type": "uprobe", "filename": exe, "offset": float64(off)},
	}
	if prog.ProbesSupported(tracefs.Kprobe) == nil {
		kp := load(prog.Kprobe)
		sym, _ := prog.SyscallSymbol("getppid")
		attach(prog.AttachKprobe(kp, sym, prog.KprobeOptions{}))
		want = append(want, map[string]any{"prog_id": id(kp), "fd_type": "kprobe", "func": sym, "offset": float64(0)})
	}
	ours := func(recs []map[string]any) []map[string]any {
		var out []map[string]any
		for _, r := range recs {
			if r["pid"] == float64(os.Getpid()) {
				out = append(out, r)
			}
		}
		slices.SortFunc(out, func(a, b map[string]any) int { return int(a["prog_id"].(float64) - b["prog_id"].(float64)) })
		return out
	}
	got := ours(bpfkitJSON(t, "perf", "list"))
	comm, _ := os.ReadFile("/proc/self/comm")
	if len(got) != len(want) {
		t.Fatalf("perf list: %d attachments of this process, want %d:\n%v", len(got), len(want), got)
	}
	for i, w := range want {
		w["pid"], w["comm"], w["fd"] = float64(os.Getpid()), strings.TrimSpace(string(comm)), got[i]["fd"]
		if !reflect.DeepEqual(got[i], w) {
			t.Errorf("perf list:\n%v\nwant\n%v", got[i], w)
		}
	}
	if fd := float64(rawLink.FD()); got[1]["fd"] != fd {
		t.Errorf("perf list: raw tracepoint on fd %v, the link is fd %v", got[1]["fd"], fd)
	}
	links := bpfkitJSON(t, "link", "list")
	var rawRec map[string]any
	for _, l := range links {
		if l["prog_id"] == id(raw) {
			rawRec = l
		}
	}
	if rawRec == nil || rawRec["type"] != "raw_tracepoint" || rawRec["target"] != "sys_enter" {
		t.Errorf("link list: raw tracepoint link %v", rawRec)
	} else {
		holdsUs(t, "link list", rawRec)
	}
	var bp []map[string]any
	if !bpftoolJSON(t, &bp, "perf", "list") {
		return
	}
	for _, r := range got {
		delete(r, "comm")
	}
	if b := ours(bp); !reflect.DeepEqual(got, b) {
		t.Errorf("perf list:\n%v\nbpftool:\n%v", got, b)
	}
	var bl []map[string]any
	bpftoolJSON(t, &bl, "link", "list")
	b := byID(bl, "id", uint32(rawRec["id"].(float64)))
	if b == nil || b["prog_id"] != rawRec["prog_id"] || b["type"] != rawRec["type"] || b["tp_name"] != rawRec["target"] {
		t.Errorf("link list: %v, bpftool %v", rawRec, b)
	}
}

// TestBpfkitProbes: probes marks this process's events as bpfkit's and
// alive, a dead bpfkit process's as stale, others as not bpfkit's; probes
// sweep removes the stale one only and says why it keeps ours.
func TestBpfkitProbes(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.LockSweeps(t) // its stale event is for its own sweep to find
	if err := prog.ProbesSupported(tracefs.Uprobe); err != nil {
		t.Skip(err)
	}
	exe, off := testutil.FuncOffset(t, uprobeTarget)
	ev, err := tracefs.CreateProbe(tracefs.ProbeSpec{Kind: tracefs.Uprobe, Path: exe, Offset: off})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Remove()
	ns, err := os.Readlink("/proc/self/ns/pid") // "pid:[4026531836]"
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	staleGroup := fmt.Sprintf("bpfkit_%s_%d_1", strings.Trim(ns, "pid:[]"), dead.Process.Pid)
	stale, other := staleGroup+"/bk_stale", "bk_other/bk_other"
	for _, e := range []string{stale, other} {
		writeUprobeEvents(t, fmt.Sprintf("p:%s %s:%#x", e, exe, off))
		t.Cleanup(func() { writeUprobeEvents(t, "-:"+e) })
	}
	ours := ev.Group + "/" + ev.Name
	list := map[string]map[string]any{}
	for _, r := range bpfkitJSON(t, "probes") {
		list[r["event"].(string)] = r
	}
	for e, want := range map[string][2]bool{ours: {true, false}, stale: {true, true}, other: {false, false}} {
		r := list[e]
		if r == nil || r["bpfkit"] != want[0] || r["stale"] != want[1] || r["file"] != "uprobe_events" {
			t.Errorf("probes: %s is %v, want bpfkit %v, stale %v", e, r, want[0], want[1])
		}
	}
	if !strings.Contains(fmt.Sprint(list[ours]["reason"]), "alive") {
		t.Errorf("probes: %s: reason %q", ours, list[ours]["reason"])
	}
	swept := map[string]map[string]any{}
	for _, r := range bpfkitJSON(t, "probes", "sweep") {
		swept[r["event"].(string)] = r
	}
	if swept[stale]["removed"] != true || swept[ours]["removed"] != false || !strings.Contains(fmt.Sprint(swept[ours]["reason"]), "alive") ||
		swept[other] != nil {
		t.Errorf("probes sweep: %v", swept)
	}
	left, err := tracefs.Events(tracefs.Uprobe)
	if err != nil || slices.Contains(left, stale) || !slices.Contains(left, ours) || !slices.Contains(left, other) {
		t.Errorf("after probes sweep: %v, %v", left, err)
	}
}

// writeUprobeEvents writes a command to uprobe_events, as another tool
// would; a removal of an event already gone is no error.
func writeUprobeEvents(t *testing.T, cmd string) {
	t.Helper()
	dir, err := tracefs.Path()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(dir+"/uprobe_events", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(cmd + "\n"); err != nil && !(strings.HasPrefix(cmd, "-:") && errors.Is(err, unix.ENOENT)) {
		t.Fatalf("%s: %v", cmd, err)
	}
}

// TestBpfkitFeatures: features -json lists the library's answers.
func TestBpfkitFeatures(t *testing.T) {
	testutil.RequireRoot(t)
	got := map[string]map[string]any{}
	for _, r := range bpfkitJSON(t, "features") {
		got[r["feature"].(string)] = r
	}
	want := expectedFeatures(t)
	for _, name := range []string{"perf_link", "kprobe_multi", "isa_v4", "btf_vmlinux", "prog_type xdp", "map_type ringbuf"} {
		if w, ok := want[name]; ok && (got[name] == nil || got[name]["supported"] != w.ok) {
			t.Errorf("features: %s is %v, want supported %v", name, got[name], w.ok)
		}
	}
	if got["tail_call_limit"]["value"] != float64(33) {
		t.Errorf("features: tail_call_limit %v", got["tail_call_limit"])
	}
	text, _, _ := runTool(t, "bpfkit", "features", "-helpers", "kprobe")
	if !strings.Contains(text, "FEATURE") || !strings.Contains(text, "helper kprobe bpf_map_lookup_elem") {
		t.Errorf("features -helpers kprobe:\n%s", text)
	}
	// A yes that rests on an errno (perf_link yes EBADF) reads as a
	// failure unless the row says why.
	for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line[min(len(line), 48):])
		if len(f) >= 2 && f[0] == "yes" && f[1] != "-" && len(f) == 2 {
			t.Errorf("features: a yes with an errno and no note: %s", line)
		}
	}
}

// TestBpfkitUsage: -h shows every command and each command's flags and
// examples (exit 0); a missing, unknown or mistyped command is one line
// that says what was expected (a typo, which word was meant); a missing or
// bad ID, an unknown flag exit 2; as nobody, exit 1 with one line saying
// root is needed.
func TestBpfkitUsage(t *testing.T) {
	out, _, status := runTool(t, "bpfkit", "-h")
	for _, c := range []string{
		"prog list", "prog show", "prog dump", "map list", "map show", "map dump", "link list",
		"perf list", "probes", "probes sweep", "features", "top",
	} {
		if status != 0 || !strings.Contains(out, "\n  "+c) {
			t.Errorf("bpfkit -h: exit %d, no %q:\n%s", status, c, out)
		}
		sub, _, status := runTool(t, "bpfkit", append(strings.Fields(c), "-h")...)
		if status != 0 || !strings.HasPrefix(sub, "bpfkit "+c+": ") || !strings.Contains(sub, "-json") ||
			!strings.Contains(sub, "examples:\n  bpfkit "+c) {
			t.Errorf("bpfkit %s -h: exit %d:\n%s", c, status, sub)
		}
	}
	for _, c := range []struct {
		args []string
		want string // the one line on stderr
	}{
		{nil, "bpfkit: no command: bpfkit -h lists them " +
			"(prog, map, link, perf, probes, features, top)\n"},
		{[]string{"nope"}, `bpfkit: unknown command "nope" (bpfkit -h lists the commands)` + "\n"},
		{[]string{"prgo", "list"}, `bpfkit: unknown command "prgo": did you mean "prog"? ` +
			"(bpfkit -h lists the commands)\n"},
		{[]string{"prog"}, "bpfkit prog: missing command: prog takes list, show or dump; " +
			"bpfkit prog -h says more\n"},
		{[]string{"prog", "lst"}, `bpfkit prog: unknown command "lst": did you mean "list"? ` +
			"(prog takes list, show or dump; bpfkit prog -h says more)\n"},
		{[]string{"p", "list"}, `bpfkit: ambiguous command "p": prog, perf or probes?` + "\n"},
		{[]string{"prog", "show", "x"},
			`bpfkit prog show: ID "x": want a number from 1 to 4294967295` + "\n"},
		{[]string{"map", "dump", "1", "2"}, ""},
		{[]string{"prog", "show", "id"}, ""},
		{[]string{"prog", "dump", "jited", "1"}, ""},
		{[]string{"map", "show", "tag", "0011223344556677"}, ""},
		{[]string{"prog", "list", "-bogus"}, ""},
		{[]string{"prog", "list", "3", "4"}, ""},
	} {
		_, errOut, status := runTool(t, "bpfkit", c.args...)
		if status != 2 || strings.Count(errOut, "\n") != 1 || c.want != "" && errOut != c.want {
			t.Errorf("bpfkit %q: exit %d, %q; want 2 and one line %q",
				c.args, status, errOut, c.want)
		}
	}
	group, _, status := runTool(t, "bpfkit", "prog", "-h")
	if status != 0 || !strings.Contains(group, "bpfkit prog dump") ||
		strings.Contains(group, "map dump") {
		t.Errorf("bpfkit prog -h: exit %d:\n%s", status, group)
	}
	testutil.RequireRoot(t)
	cmd := exec.Command(toolPath(t, "bpfkit"), "prog", "list")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || strings.Count(string(b), "\n") != 1 ||
		!strings.HasPrefix(string(b), "bpfkit prog list: needs root") || !strings.Contains(string(b), "CAP_SYS_ADMIN") {
		t.Errorf("bpfkit prog list as nobody: %v, %q", err, b)
	}
}

// TestBpfkitPerfOrder: perf list orders processes and their fds as
// numbers, as bpftool does: fd 99 before fd 1000, pid 2 before pid 1000.
func TestBpfkitPerfOrder(t *testing.T) {
	testutil.RequireRoot(t)
	p, err := prog.Load(prog.Spec{
		Type:    prog.Tracepoint,
		Name:    "bk_order",
		License: "GPL",
		Insns:   []Item{Mov64Imm(R0, 1), Exit()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	l, err := prog.AttachTracepoint(p, "syscalls", "sys_enter_getppid", prog.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	id, _ := p.Info()
	perfFD := -1
	for _, r := range bpfkitJSON(t, "perf", "list") {
		if r["pid"] == float64(os.Getpid()) && r["prog_id"] == float64(id.ID) {
			perfFD = int(r["fd"].(float64))
		}
	}
	// The perf event's fd again at 99 and at 1000 or above: as strings,
	// "1000" sorts before "99".
	var dups []int
	for _, at := range []int{99, 1000} {
		fd, err := unix.FcntlInt(uintptr(perfFD), unix.F_DUPFD_CLOEXEC, at)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		dups = append(dups, fd)
	}
	recs := bpfkitJSON(t, "perf", "list")
	var fds []int
	for i, r := range recs {
		if r["pid"] == float64(os.Getpid()) {
			fds = append(fds, int(r["fd"].(float64)))
		}
		if i > 0 && recs[i-1]["pid"].(float64) > r["pid"].(float64) {
			t.Errorf("perf list: pid %v after pid %v", r["pid"], recs[i-1]["pid"])
		}
	}
	if !slices.IsSorted(fds) || !slices.Contains(fds, dups[0]) || !slices.Contains(fds, dups[1]) {
		t.Errorf("perf list: this process's fds in the order %v, want %v among them in order",
			fds, dups)
	}
}
