package sys

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unsafe"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"golang.org/x/sys/unix"
)

// The layout of every attr and info struct, checked twice:
//
//   - at compile time, on every port `make lint` vets (arm64, arm, 386,
//     riscv64, amd64): layoutAsserts below fails to build where a field lies
//     elsewhere than the uapi says (an index out of range);
//   - against the running kernel's BTF by TestLayoutBTF, which also checks
//     that the table below names every field, so the table is neither wrong
//     nor incomplete.
//
// On 32-bit ports Go aligns uint64 to 4 bytes and a pointer is 4 bytes: the
// table is what catches a field that moved there.
var wantOffsets = map[string]uintptr{
	"MapCreateAttr.MapType": 0, "MapCreateAttr.KeySize": 4, "MapCreateAttr.ValueSize": 8,
	"MapCreateAttr.MaxEntries": 12, "MapCreateAttr.MapFlags": 16, "MapCreateAttr.InnerMapFD": 20,
	"MapCreateAttr.NumaNode": 24, "MapCreateAttr.MapName": 28, "MapCreateAttr.MapIfindex": 44,
	"MapCreateAttr.BTFFD": 48, "MapCreateAttr.BTFKeyTypeID": 52, "MapCreateAttr.BTFValueTypeID": 56,
	"MapCreateAttr.BTFVmlinuxValueTypeID": 60, "MapCreateAttr.MapExtra": 64,
	"MapCreateAttr.ValueTypeBTFObjFD": 72, "MapCreateAttr.MapTokenFD": 76,
	"MapElemAttr.MapFD": 0, "MapElemAttr.Key": 8, "MapElemAttr.Value": 16, "MapElemAttr.Flags": 24,
	"MapBatchAttr.InBatch": 0, "MapBatchAttr.OutBatch": 8, "MapBatchAttr.Keys": 16, "MapBatchAttr.Values": 24,
	"MapBatchAttr.Count": 32, "MapBatchAttr.MapFD": 36, "MapBatchAttr.ElemFlags": 40, "MapBatchAttr.Flags": 48,
	"ProgLoadAttr.ProgType": 0, "ProgLoadAttr.InsnCnt": 4, "ProgLoadAttr.Insns": 8, "ProgLoadAttr.License": 16,
	"ProgLoadAttr.LogLevel": 24, "ProgLoadAttr.LogSize": 28, "ProgLoadAttr.LogBuf": 32,
	"ProgLoadAttr.KernVersion": 40, "ProgLoadAttr.ProgFlags": 44, "ProgLoadAttr.ProgName": 48,
	"ProgLoadAttr.ProgIfindex": 64, "ProgLoadAttr.ExpectedAttachType": 68, "ProgLoadAttr.ProgBTFFD": 72,
	"ProgLoadAttr.FuncInfoRecSize": 76, "ProgLoadAttr.FuncInfo": 80, "ProgLoadAttr.FuncInfoCnt": 88,
	"ProgLoadAttr.LineInfoRecSize": 92, "ProgLoadAttr.LineInfo": 96, "ProgLoadAttr.LineInfoCnt": 104,
	"ProgLoadAttr.AttachBTFID": 108, "ProgLoadAttr.AttachProgFD": 112, "ProgLoadAttr.CoreReloCnt": 116,
	"ProgLoadAttr.FDArray": 120, "ProgLoadAttr.CoreRelos": 128, "ProgLoadAttr.CoreReloRecSize": 136,
	"ProgLoadAttr.LogTrueSize": 140, "ProgLoadAttr.ProgTokenFD": 144, "ProgLoadAttr.FDArrayCnt": 148,
	"ObjAttr.Pathname": 0, "ObjAttr.BPFFD": 8, "ObjAttr.FileFlags": 12, "ObjAttr.PathFD": 16,
	"ProgQueryAttr.TargetFD": 0, "ProgQueryAttr.AttachType": 4, "ProgQueryAttr.QueryFlags": 8,
	"ProgQueryAttr.AttachFlags": 12, "ProgQueryAttr.ProgIDs": 16, "ProgQueryAttr.ProgCnt": 24,
	"ProgQueryAttr.ProgAttachFlags": 32, "ProgQueryAttr.LinkIDs": 40, "ProgQueryAttr.LinkAttachFlags": 48,
	"ProgQueryAttr.Revision": 56,
	"TestRunAttr.ProgFD":     0, "TestRunAttr.Retval": 4, "TestRunAttr.DataSizeIn": 8, "TestRunAttr.DataSizeOut": 12,
	"TestRunAttr.DataIn": 16, "TestRunAttr.DataOut": 24, "TestRunAttr.Repeat": 32, "TestRunAttr.Duration": 36,
	"TestRunAttr.CtxSizeIn": 40, "TestRunAttr.CtxSizeOut": 44, "TestRunAttr.CtxIn": 48, "TestRunAttr.CtxOut": 56,
	"TestRunAttr.Flags": 64, "TestRunAttr.CPU": 68, "TestRunAttr.BatchSize": 72,
	"GetIDAttr.ID": 0, "GetIDAttr.NextID": 4, "GetIDAttr.OpenFlags": 8,
	"InfoAttr.BPFFD": 0, "InfoAttr.InfoLen": 4, "InfoAttr.Info": 8,
	"RawTracepointAttr.Name": 0, "RawTracepointAttr.ProgFD": 8, "RawTracepointAttr.Cookie": 16,
	"LinkCreateAttr.ProgFD": 0, "LinkCreateAttr.TargetFD": 4, "LinkCreateAttr.AttachType": 8,
	"LinkCreateAttr.Flags": 12, "LinkCreateAttr.Cookie": 16,
	"LinkCreateTracingAttr.ProgFD": 0, "LinkCreateTracingAttr.TargetFD": 4,
	"LinkCreateTracingAttr.AttachType": 8, "LinkCreateTracingAttr.Flags": 12,
	"LinkCreateTracingAttr.TargetBTFID": 16, "LinkCreateTracingAttr.Cookie": 24,
	"LinkCreateKprobeMultiAttr.ProgFD": 0, "LinkCreateKprobeMultiAttr.TargetFD": 4,
	"LinkCreateKprobeMultiAttr.AttachType": 8, "LinkCreateKprobeMultiAttr.Flags": 12,
	"LinkCreateKprobeMultiAttr.KprobeFlags": 16, "LinkCreateKprobeMultiAttr.Cnt": 20,
	"LinkCreateKprobeMultiAttr.Syms": 24, "LinkCreateKprobeMultiAttr.Addrs": 32, "LinkCreateKprobeMultiAttr.Cookies": 40,
	"LinkCreateUprobeMultiAttr.ProgFD": 0, "LinkCreateUprobeMultiAttr.TargetFD": 4,
	"LinkCreateUprobeMultiAttr.AttachType": 8, "LinkCreateUprobeMultiAttr.Flags": 12,
	"LinkCreateUprobeMultiAttr.Path": 16, "LinkCreateUprobeMultiAttr.Offsets": 24,
	"LinkCreateUprobeMultiAttr.RefCtrOffsets": 32, "LinkCreateUprobeMultiAttr.Cookies": 40,
	"LinkCreateUprobeMultiAttr.Cnt": 48, "LinkCreateUprobeMultiAttr.UprobeFlags": 52,
	"LinkCreateUprobeMultiAttr.PID": 56,
	"TaskFDQueryAttr.PID":           0, "TaskFDQueryAttr.FD": 4, "TaskFDQueryAttr.Flags": 8, "TaskFDQueryAttr.BufLen": 12,
	"TaskFDQueryAttr.Buf": 16, "TaskFDQueryAttr.ProgID": 24, "TaskFDQueryAttr.FDType": 28,
	"TaskFDQueryAttr.ProbeOffset": 32, "TaskFDQueryAttr.ProbeAddr": 40,
	"LinkDetachAttr.LinkFD": 0,
	"EnableStatsAttr.Type":  0,
	"ProgInfo.Type":         0, "ProgInfo.ID": 4, "ProgInfo.Tag": 8, "ProgInfo.JitedProgLen": 16,
	"ProgInfo.XlatedProgLen": 20, "ProgInfo.JitedProgInsns": 24, "ProgInfo.XlatedProgInsns": 32,
	"ProgInfo.LoadTime": 40, "ProgInfo.CreatedByUID": 48, "ProgInfo.NrMapIDs": 52, "ProgInfo.MapIDs": 56,
	"ProgInfo.Name": 64, "ProgInfo.Ifindex": 80, "ProgInfo.GPLCompatible": 84, "ProgInfo.NetnsDev": 88,
	"ProgInfo.NetnsIno": 96, "ProgInfo.NrJitedKsyms": 104, "ProgInfo.NrJitedFuncLens": 108,
	"ProgInfo.JitedKsyms": 112, "ProgInfo.JitedFuncLens": 120, "ProgInfo.BTFID": 128,
	"ProgInfo.FuncInfoRecSize": 132, "ProgInfo.FuncInfo": 136, "ProgInfo.NrFuncInfo": 144,
	"ProgInfo.NrLineInfo": 148, "ProgInfo.LineInfo": 152, "ProgInfo.JitedLineInfo": 160,
	"ProgInfo.NrJitedLineInfo": 168, "ProgInfo.LineInfoRecSize": 172, "ProgInfo.JitedLineInfoRecSize": 176,
	"ProgInfo.NrProgTags": 180, "ProgInfo.ProgTags": 184, "ProgInfo.RunTimeNs": 192, "ProgInfo.RunCnt": 200,
	"ProgInfo.RecursionMisses": 208, "ProgInfo.VerifiedInsns": 216, "ProgInfo.AttachBTFObjID": 220,
	"ProgInfo.AttachBTFID": 224,
	"MapInfo.Type":         0, "MapInfo.ID": 4, "MapInfo.KeySize": 8, "MapInfo.ValueSize": 12,
	"MapInfo.MaxEntries": 16, "MapInfo.MapFlags": 20, "MapInfo.Name": 24, "MapInfo.Ifindex": 40,
	"MapInfo.BTFVmlinuxValueTypeID": 44, "MapInfo.NetnsDev": 48, "MapInfo.NetnsIno": 56, "MapInfo.BTFID": 64,
	"MapInfo.BTFKeyTypeID": 68, "MapInfo.BTFValueTypeID": 72, "MapInfo.BTFVmlinuxID": 76,
	"MapInfo.MapExtra": 80, "MapInfo.Hash": 88, "MapInfo.HashSize": 96,
	"LinkInfo.Type": 0, "LinkInfo.ID": 4, "LinkInfo.ProgID": 8, "LinkInfo.Union": 16,
	"UprobeMultiLinkInfo.Type": 0, "UprobeMultiLinkInfo.ID": 4, "UprobeMultiLinkInfo.ProgID": 8,
	"UprobeMultiLinkInfo.Path": 16, "UprobeMultiLinkInfo.Offsets": 24,
	"UprobeMultiLinkInfo.RefCtrOffsets": 32, "UprobeMultiLinkInfo.Cookies": 40,
	"UprobeMultiLinkInfo.PathSize": 48, "UprobeMultiLinkInfo.Count": 52,
	"UprobeMultiLinkInfo.Flags": 56, "UprobeMultiLinkInfo.PID": 60,
	"BTFInfo.BTF": 0, "BTFInfo.BTFSize": 8, "BTFInfo.ID": 12, "BTFInfo.Name": 16,
	"BTFInfo.NameLen": 24, "BTFInfo.KernelBTF": 28,
}

// wantSizes are the sizes of the info structs (the attrs are all AttrSize).
var wantSizes = map[string]uintptr{"ProgInfo": 232, "MapInfo": 104, "LinkInfo": 64,
	"UprobeMultiLinkInfo": 64, "BTFInfo": 32}

// One compile-time check per entry of wantOffsets and wantSizes:
// [1]struct{}{}[x - want] is out of range unless x == want.
var _ = [...]struct{}{
	[1]struct{}{}[unsafe.Offsetof(MapCreateAttr{}.MapName)-28], [1]struct{}{}[unsafe.Offsetof(MapCreateAttr{}.MapIfindex)-44],
	[1]struct{}{}[unsafe.Offsetof(MapCreateAttr{}.BTFVmlinuxValueTypeID)-60], [1]struct{}{}[unsafe.Offsetof(MapCreateAttr{}.MapExtra)-64],
	[1]struct{}{}[unsafe.Offsetof(MapCreateAttr{}.ValueTypeBTFObjFD)-72], [1]struct{}{}[unsafe.Offsetof(MapCreateAttr{}.MapTokenFD)-76],
	[1]struct{}{}[unsafe.Offsetof(MapElemAttr{}.Key)-8], [1]struct{}{}[unsafe.Offsetof(MapElemAttr{}.Value)-16],
	[1]struct{}{}[unsafe.Offsetof(MapElemAttr{}.Flags)-24],
	[1]struct{}{}[unsafe.Offsetof(MapBatchAttr{}.OutBatch)-8], [1]struct{}{}[unsafe.Offsetof(MapBatchAttr{}.Keys)-16],
	[1]struct{}{}[unsafe.Offsetof(MapBatchAttr{}.Values)-24], [1]struct{}{}[unsafe.Offsetof(MapBatchAttr{}.Count)-32],
	[1]struct{}{}[unsafe.Offsetof(MapBatchAttr{}.ElemFlags)-40], [1]struct{}{}[unsafe.Offsetof(MapBatchAttr{}.Flags)-48],
	[1]struct{}{}[unsafe.Offsetof(ProgLoadAttr{}.Insns)-8], [1]struct{}{}[unsafe.Offsetof(ProgLoadAttr{}.License)-16],
	[1]struct{}{}[unsafe.Offsetof(ProgLoadAttr{}.LogLevel)-24], [1]struct{}{}[unsafe.Offsetof(ProgLoadAttr{}.LogBuf)-32],
	[1]struct{}{}[unsafe.Offsetof(ProgLoadAttr{}.KernVersion)-40], [1]struct{}{}[unsafe.Offsetof(ProgLoadAttr{}.ProgName)-48],
	[1]struct{}{}[unsafe.Offsetof(ProgLoadAttr{}.ExpectedAttachType)-68], [1]struct{}{}[unsafe.Offsetof(ProgLoadAttr{}.FuncInfo)-80],
	[1]struct{}{}[unsafe.Offsetof(ProgLoadAttr{}.FuncInfoCnt)-88], [1]struct{}{}[unsafe.Offsetof(ProgLoadAttr{}.LineInfo)-96],
	[1]struct{}{}[unsafe.Offsetof(ProgLoadAttr{}.LineInfoCnt)-104], [1]struct{}{}[unsafe.Offsetof(ProgLoadAttr{}.AttachProgFD)-112],
	[1]struct{}{}[unsafe.Offsetof(ProgLoadAttr{}.FDArray)-120], [1]struct{}{}[unsafe.Offsetof(ProgLoadAttr{}.CoreRelos)-128],
	[1]struct{}{}[unsafe.Offsetof(ProgLoadAttr{}.CoreReloRecSize)-136], [1]struct{}{}[unsafe.Offsetof(ProgLoadAttr{}.FDArrayCnt)-148],
	[1]struct{}{}[unsafe.Offsetof(ObjAttr{}.BPFFD)-8], [1]struct{}{}[unsafe.Offsetof(ObjAttr{}.PathFD)-16],
	[1]struct{}{}[unsafe.Offsetof(ProgQueryAttr{}.ProgIDs)-16], [1]struct{}{}[unsafe.Offsetof(ProgQueryAttr{}.ProgCnt)-24],
	[1]struct{}{}[unsafe.Offsetof(ProgQueryAttr{}.ProgAttachFlags)-32], [1]struct{}{}[unsafe.Offsetof(ProgQueryAttr{}.LinkIDs)-40],
	[1]struct{}{}[unsafe.Offsetof(ProgQueryAttr{}.LinkAttachFlags)-48], [1]struct{}{}[unsafe.Offsetof(ProgQueryAttr{}.Revision)-56],
	[1]struct{}{}[unsafe.Offsetof(TestRunAttr{}.DataIn)-16], [1]struct{}{}[unsafe.Offsetof(TestRunAttr{}.DataOut)-24],
	[1]struct{}{}[unsafe.Offsetof(TestRunAttr{}.Repeat)-32], [1]struct{}{}[unsafe.Offsetof(TestRunAttr{}.CtxIn)-48],
	[1]struct{}{}[unsafe.Offsetof(TestRunAttr{}.CtxOut)-56], [1]struct{}{}[unsafe.Offsetof(TestRunAttr{}.Flags)-64],
	[1]struct{}{}[unsafe.Offsetof(TestRunAttr{}.BatchSize)-72],
	[1]struct{}{}[unsafe.Offsetof(InfoAttr{}.Info)-8],
	[1]struct{}{}[unsafe.Offsetof(RawTracepointAttr{}.ProgFD)-8], [1]struct{}{}[unsafe.Offsetof(RawTracepointAttr{}.Cookie)-16],
	[1]struct{}{}[unsafe.Offsetof(LinkCreateAttr{}.Cookie)-16],
	[1]struct{}{}[unsafe.Offsetof(LinkCreateTracingAttr{}.TargetBTFID)-16],
	[1]struct{}{}[unsafe.Offsetof(LinkCreateTracingAttr{}.Cookie)-24],
	[1]struct{}{}[unsafe.Offsetof(LinkCreateKprobeMultiAttr{}.Cnt)-20], [1]struct{}{}[unsafe.Offsetof(LinkCreateKprobeMultiAttr{}.Syms)-24],
	[1]struct{}{}[unsafe.Offsetof(LinkCreateKprobeMultiAttr{}.Addrs)-32], [1]struct{}{}[unsafe.Offsetof(LinkCreateKprobeMultiAttr{}.Cookies)-40],
	[1]struct{}{}[unsafe.Offsetof(LinkCreateUprobeMultiAttr{}.Path)-16],
	[1]struct{}{}[unsafe.Offsetof(LinkCreateUprobeMultiAttr{}.Cookies)-40],
	[1]struct{}{}[unsafe.Offsetof(LinkCreateUprobeMultiAttr{}.PID)-56],
	[1]struct{}{}[unsafe.Sizeof(LinkCreateUprobeMultiAttr{})-AttrSize],
	[1]struct{}{}[unsafe.Offsetof(TaskFDQueryAttr{}.Buf)-16], [1]struct{}{}[unsafe.Offsetof(TaskFDQueryAttr{}.ProgID)-24],
	[1]struct{}{}[unsafe.Offsetof(TaskFDQueryAttr{}.ProbeOffset)-32], [1]struct{}{}[unsafe.Offsetof(TaskFDQueryAttr{}.ProbeAddr)-40],
	[1]struct{}{}[unsafe.Offsetof(ProgInfo{}.JitedProgInsns)-24], [1]struct{}{}[unsafe.Offsetof(ProgInfo{}.XlatedProgInsns)-32],
	[1]struct{}{}[unsafe.Offsetof(ProgInfo{}.LoadTime)-40], [1]struct{}{}[unsafe.Offsetof(ProgInfo{}.MapIDs)-56],
	[1]struct{}{}[unsafe.Offsetof(ProgInfo{}.Name)-64], [1]struct{}{}[unsafe.Offsetof(ProgInfo{}.NetnsDev)-88],
	[1]struct{}{}[unsafe.Offsetof(ProgInfo{}.JitedKsyms)-112], [1]struct{}{}[unsafe.Offsetof(ProgInfo{}.JitedFuncLens)-120],
	[1]struct{}{}[unsafe.Offsetof(ProgInfo{}.BTFID)-128], [1]struct{}{}[unsafe.Offsetof(ProgInfo{}.FuncInfo)-136],
	[1]struct{}{}[unsafe.Offsetof(ProgInfo{}.LineInfo)-152], [1]struct{}{}[unsafe.Offsetof(ProgInfo{}.JitedLineInfo)-160],
	[1]struct{}{}[unsafe.Offsetof(ProgInfo{}.ProgTags)-184], [1]struct{}{}[unsafe.Offsetof(ProgInfo{}.RunTimeNs)-192],
	[1]struct{}{}[unsafe.Offsetof(ProgInfo{}.RecursionMisses)-208], [1]struct{}{}[unsafe.Offsetof(ProgInfo{}.VerifiedInsns)-216],
	[1]struct{}{}[unsafe.Offsetof(ProgInfo{}.AttachBTFID)-224],
	[1]struct{}{}[unsafe.Offsetof(MapInfo{}.NetnsDev)-48], [1]struct{}{}[unsafe.Offsetof(MapInfo{}.BTFID)-64],
	[1]struct{}{}[unsafe.Offsetof(MapInfo{}.MapExtra)-80], [1]struct{}{}[unsafe.Offsetof(MapInfo{}.Hash)-88],
	[1]struct{}{}[unsafe.Offsetof(MapInfo{}.HashSize)-96],
	[1]struct{}{}[unsafe.Offsetof(LinkInfo{}.Union)-16],
	[1]struct{}{}[unsafe.Offsetof(BTFInfo{}.BTFSize)-8],
	[1]struct{}{}[unsafe.Offsetof(BTFInfo{}.Name)-16],
	[1]struct{}{}[unsafe.Offsetof(BTFInfo{}.NameLen)-24],
	[1]struct{}{}[unsafe.Offsetof(BTFInfo{}.KernelBTF)-28],
	[1]struct{}{}[unsafe.Sizeof(Pointer{})-8],
	[1]struct{}{}[unsafe.Sizeof(ProgInfo{})-232], [1]struct{}{}[unsafe.Sizeof(MapInfo{})-104], [1]struct{}{}[unsafe.Sizeof(LinkInfo{})-64],
	[1]struct{}{}[unsafe.Sizeof(UprobeMultiLinkInfo{})-64],
	[1]struct{}{}[unsafe.Offsetof(UprobeMultiLinkInfo{}.Path)-16],
	[1]struct{}{}[unsafe.Offsetof(UprobeMultiLinkInfo{}.PID)-60],
	[1]struct{}{}[unsafe.Sizeof(BTFInfo{})-32],
	[1]struct{}{}[unsafe.Sizeof(LinkCreateTracingAttr{})-AttrSize],
	[1]struct{}{}[unsafe.Sizeof(MapCreateAttr{})-AttrSize], [1]struct{}{}[unsafe.Sizeof(MapElemAttr{})-AttrSize],
	[1]struct{}{}[unsafe.Sizeof(MapBatchAttr{})-AttrSize], [1]struct{}{}[unsafe.Sizeof(ProgLoadAttr{})-AttrSize],
	[1]struct{}{}[unsafe.Sizeof(ObjAttr{})-AttrSize], [1]struct{}{}[unsafe.Sizeof(ProgQueryAttr{})-AttrSize],
	[1]struct{}{}[unsafe.Sizeof(TestRunAttr{})-AttrSize], [1]struct{}{}[unsafe.Sizeof(GetIDAttr{})-AttrSize],
	[1]struct{}{}[unsafe.Sizeof(InfoAttr{})-AttrSize], [1]struct{}{}[unsafe.Sizeof(RawTracepointAttr{})-AttrSize],
	[1]struct{}{}[unsafe.Sizeof(LinkCreateAttr{})-AttrSize], [1]struct{}{}[unsafe.Sizeof(LinkDetachAttr{})-AttrSize],
	[1]struct{}{}[unsafe.Sizeof(EnableStatsAttr{})-AttrSize],
	[1]struct{}{}[unsafe.Sizeof(LinkCreateKprobeMultiAttr{})-AttrSize], [1]struct{}{}[unsafe.Sizeof(TaskFDQueryAttr{})-AttrSize],
}

var layoutTypes = []any{MapCreateAttr{}, MapElemAttr{}, MapBatchAttr{}, ProgLoadAttr{}, ObjAttr{}, ProgQueryAttr{},
	TestRunAttr{}, GetIDAttr{}, InfoAttr{}, RawTracepointAttr{}, LinkCreateAttr{},
	LinkCreateTracingAttr{}, LinkCreateKprobeMultiAttr{}, LinkCreateUprobeMultiAttr{},
	LinkDetachAttr{}, EnableStatsAttr{},
	TaskFDQueryAttr{},
	ProgInfo{}, MapInfo{}, LinkInfo{}, UprobeMultiLinkInfo{}, BTFInfo{}}

// TestLayout checks every named field against wantOffsets on this port,
// and that the table names them all.
func TestLayout(t *testing.T) {
	seen := 0
	for _, v := range layoutTypes {
		typ := reflect.TypeOf(v)
		want, ok := wantSizes[typ.Name()]
		if !ok {
			want = AttrSize
		}
		if typ.Size() != want {
			t.Errorf("%s is %d bytes, want %d", typ.Name(), typ.Size(), want)
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Name == "_" {
				continue
			}
			want, ok := wantOffsets[typ.Name()+"."+f.Name]
			if !ok {
				t.Errorf("%s.%s is not in wantOffsets", typ.Name(), f.Name)
				continue
			}
			seen++
			if f.Offset != want {
				t.Errorf("%s.%s at offset %d, the uapi says %d", typ.Name(), f.Name, f.Offset, want)
			}
		}
	}
	if seen != len(wantOffsets) {
		t.Errorf("found %d of the %d fields in wantOffsets: one was renamed or removed", seen, len(wantOffsets))
	}
}

// cNames are the uapi names of the fields whose Go name is not their C name
// in CamelCase, as a path through nested named members.
var cNames = map[string]string{
	"GetIDAttr.ID":                            "start_id",
	"LinkCreateAttr.Cookie":                   "perf_event.bpf_cookie",
	"LinkCreateTracingAttr.TargetBTFID":       "tracing.target_btf_id",
	"LinkCreateTracingAttr.Cookie":            "tracing.cookie",
	"RawTracepointAttr.Cookie":                "cookie",
	"LinkCreateKprobeMultiAttr.KprobeFlags":   "kprobe_multi.flags",
	"LinkCreateKprobeMultiAttr.Cnt":           "kprobe_multi.cnt",
	"LinkCreateKprobeMultiAttr.Syms":          "kprobe_multi.syms",
	"LinkCreateKprobeMultiAttr.Addrs":         "kprobe_multi.addrs",
	"LinkCreateKprobeMultiAttr.Cookies":       "kprobe_multi.cookies",
	"LinkCreateUprobeMultiAttr.Path":          "uprobe_multi.path",
	"LinkCreateUprobeMultiAttr.Offsets":       "uprobe_multi.offsets",
	"LinkCreateUprobeMultiAttr.RefCtrOffsets": "uprobe_multi.ref_ctr_offsets",
	"LinkCreateUprobeMultiAttr.Cookies":       "uprobe_multi.cookies",
	"LinkCreateUprobeMultiAttr.Cnt":           "uprobe_multi.cnt",
	"LinkCreateUprobeMultiAttr.UprobeFlags":   "uprobe_multi.flags",
	"LinkCreateUprobeMultiAttr.PID":           "uprobe_multi.pid",
	"TaskFDQueryAttr.PID":                     "pid",
	"LinkInfo.Union":                          "", // the union by link type: its members are checked where used
	"UprobeMultiLinkInfo.Path":                "uprobe_multi.path",
	"UprobeMultiLinkInfo.Offsets":             "uprobe_multi.offsets",
	"UprobeMultiLinkInfo.RefCtrOffsets":       "uprobe_multi.ref_ctr_offsets",
	"UprobeMultiLinkInfo.Cookies":             "uprobe_multi.cookies",
	"UprobeMultiLinkInfo.PathSize":            "uprobe_multi.path_size",
	"UprobeMultiLinkInfo.Count":               "uprobe_multi.count",
	"UprobeMultiLinkInfo.Flags":               "uprobe_multi.flags",
	"UprobeMultiLinkInfo.PID":                 "uprobe_multi.pid",
}

// cName turns a Go field name into the uapi's: "BTFVmlinuxValueTypeID" is
// btf_vmlinux_value_type_id. Runs of capitals are split into the acronyms
// the struct names use.
func cName(goName string) string {
	acronyms := []string{"BPF", "BTF", "GPL", "UID", "CPU", "IDs", "ID", "FD"}
	var words []string
	for s := goName; s != ""; {
		n := 0
		for _, a := range acronyms {
			if strings.HasPrefix(s, a) && (len(s) == len(a) || !unicode.IsLower(rune(s[len(a)])) || a == "IDs") {
				n = len(a)
				break
			}
		}
		if n == 0 {
			n = 1
			for n < len(s) && unicode.IsLower(rune(s[n])) {
				n++
			}
		}
		words = append(words, strings.ToLower(s[:n]))
		s = s[n:]
	}
	return strings.Join(words, "_")
}

// TestLayoutBTF checks wantOffsets, and each field's size, against the
// running kernel's BTF: every attr struct against the member of union
// bpf_attr that holds all its fields, the info structs against struct
// bpf_prog_info, bpf_map_info and bpf_link_info.
func TestLayoutBTF(t *testing.T) {
	raw, err := os.ReadFile("/sys/kernel/btf/vmlinux")
	if err != nil {
		t.Skipf("no kernel BTF to read the uapi structs from: %v", err)
	}
	b := parseBTF(t, raw)
	attr := b.byName(5, "bpf_attr") // BTF_KIND_UNION
	if attr == 0 {
		t.Fatal("union bpf_attr not in the kernel's BTF")
	}
	for _, v := range layoutTypes {
		typ := reflect.TypeOf(v)
		var fields []reflect.StructField
		for i := range typ.NumField() {
			if f := typ.Field(i); f.Name != "_" {
				if c, ok := cNames[typ.Name()+"."+f.Name]; !ok || c != "" {
					fields = append(fields, f)
				}
			}
		}
		name := func(f reflect.StructField) string {
			if c, ok := cNames[typ.Name()+"."+f.Name]; ok {
				return c
			}
			return cName(f.Name)
		}
		// The C struct: an info struct by name, or the member of the
		// union holding every field.
		var members map[string]btfMember
		if info, ok := map[string]string{"ProgInfo": "bpf_prog_info", "MapInfo": "bpf_map_info",
			"LinkInfo": "bpf_link_info", "UprobeMultiLinkInfo": "bpf_link_info",
			"BTFInfo": "bpf_btf_info"}[typ.Name()]; ok {
			id := b.byName(4, info)
			if id == 0 {
				t.Fatalf("struct %s not in the kernel's BTF", info)
			}
			members = b.members(id, 0, "")
		} else {
			for _, m := range b.types[attr].members {
				cand := b.members(m.typ, m.bitOff, "")
				found := true
				for _, f := range fields {
					if _, ok := cand[name(f)]; !ok {
						found = false
						break
					}
				}
				if found {
					members = cand
					break
				}
			}
			if members == nil {
				t.Errorf("%s: no member of union bpf_attr has all of its fields", typ.Name())
				continue
			}
		}
		for _, f := range fields {
			m, ok := members[name(f)]
			off := uintptr(m.bitOff / 8)
			switch {
			case !ok:
				t.Errorf("%s.%s: the kernel has no %s", typ.Name(), f.Name, name(f))
			case f.Offset != off || wantOffsets[typ.Name()+"."+f.Name] != off:
				t.Errorf("%s.%s at %d (table %d), the kernel's %s at %d", typ.Name(), f.Name, f.Offset,
					wantOffsets[typ.Name()+"."+f.Name], name(f), off)
			case m.bitSize == 0 && uint32(f.Type.Size()) != b.size(m.typ):
				t.Errorf("%s.%s is %d bytes, the kernel's %s %d", typ.Name(), f.Name, f.Type.Size(), name(f), b.size(m.typ))
			}
		}
	}
}

type btfType struct {
	name    string
	kind    uint32
	size    uint32 // or the type referred to
	members []btfMember
	nelems  uint32 // arrays
}

type btfMember struct {
	name            string
	typ             uint32
	bitOff, bitSize uint32
}

type btf struct {
	t     *testing.T
	types []btfType // by id; 0 is void
}

// parseBTF reads the kinds this test needs from a BTF blob (the format is
// in the kernel's Documentation/bpf/btf.rst).
func parseBTF(t *testing.T, raw []byte) *btf {
	le := binary.LittleEndian
	if len(raw) < 24 || le.Uint16(raw) != 0xeb9f {
		t.Fatal("not little-endian BTF")
	}
	hdrLen := le.Uint32(raw[4:])
	typeOff, typeLen, strOff := le.Uint32(raw[8:]), le.Uint32(raw[12:]), le.Uint32(raw[16:])
	types := raw[hdrLen+typeOff : hdrLen+typeOff+typeLen]
	strs := raw[hdrLen+strOff:]
	str := func(off uint32) string {
		s := strs[off:]
		return string(s[:bytes.IndexByte(s, 0)])
	}
	b := &btf{t: t, types: []btfType{{}}}
	for off := uint32(0); off+12 <= uint32(len(types)); {
		info := le.Uint32(types[off+4:])
		bt := btfType{name: str(le.Uint32(types[off:])), kind: (info >> 24) & 0x1f, size: le.Uint32(types[off+8:])}
		vlen, kflag := info&0xffff, info>>31
		off += 12
		switch bt.kind {
		case 1, 14, 17: // int, var, decl_tag
			off += 4
		case 3: // array: elem type, index type, nelems
			bt.size, bt.nelems = le.Uint32(types[off:]), le.Uint32(types[off+8:])
			off += 12
		case 4, 5: // struct, union
			for range vlen {
				m := btfMember{name: str(le.Uint32(types[off:])), typ: le.Uint32(types[off+4:]), bitOff: le.Uint32(types[off+8:])}
				if kflag != 0 {
					m.bitSize, m.bitOff = m.bitOff>>24, m.bitOff&0xffffff
				}
				bt.members = append(bt.members, m)
				off += 12
			}
		case 15, 19: // datasec, enum64
			off += 12 * vlen
		case 6, 13: // enum, func_proto
			off += 8 * vlen
		}
		b.types = append(b.types, bt)
	}
	return b
}

// byName is the id of the named type of a kind, or 0.
func (b *btf) byName(kind uint32, name string) uint32 {
	for id, bt := range b.types {
		if bt.kind == kind && bt.name == name {
			return uint32(id)
		}
	}
	return 0
}

// resolve follows typedefs and qualifiers (typedef, volatile, const,
// restrict, type_tag).
func (b *btf) resolve(id uint32) uint32 {
	for {
		switch b.types[id].kind {
		case 8, 9, 10, 11, 18:
			id = b.types[id].size
		default:
			return id
		}
	}
}

// size is the size in bytes of type id.
func (b *btf) size(id uint32) uint32 {
	bt := b.types[b.resolve(id)]
	switch bt.kind {
	case 2: // pointer
		return 8
	case 3:
		return b.size(bt.size) * bt.nelems
	}
	return bt.size
}

// members flattens the struct or union id at bit offset base: anonymous
// members' members are its own, a named struct or union member's are
// added as "name.member" beside the member itself.
func (b *btf) members(id, base uint32, prefix string) map[string]btfMember {
	out := map[string]btfMember{}
	for _, m := range b.types[b.resolve(id)].members {
		m.bitOff += base
		inner := b.types[b.resolve(m.typ)]
		if inner.kind == 4 || inner.kind == 5 {
			p := prefix
			if m.name != "" {
				p = prefix + m.name + "."
			}
			for k, v := range b.members(m.typ, m.bitOff, p) {
				out[k] = v
			}
		}
		if m.name != "" {
			out[prefix+m.name] = m
		}
	}
	return out
}

// TestKernelAttrSize checks the probed size against the union in the
// kernel's BTF.
func TestKernelAttrSize(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	raw, err := os.ReadFile("/sys/kernel/btf/vmlinux")
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	b := parseBTF(t, raw)
	want := b.size(b.byName(5, "bpf_attr"))
	if want > AttrSize {
		t.Fatalf("this kernel's union bpf_attr is %d bytes, larger than AttrSize %d", want, AttrSize)
	}
	if got, err := kernelAttrSize(); uint32(got) != want || err != nil {
		t.Fatalf("probed sizeof(union bpf_attr) = %d (%v), BTF says %d", got, err, want)
	}
}

// TestAttrSizeJournalFails: when the journal could not record the first
// size probe, its ENOSPC was taken for the kernel's answer and AttrSize was
// cached for good. Now the call fails with ErrJournal and nothing is cached.
func TestAttrSizeJournalFails(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer full.Close()
	attrSize.Store(0)
	SetJournal(full)
	fd, err := MapCreate(&MapCreateAttr{MapType: unix.BPF_MAP_TYPE_ARRAY, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	SetJournal(nil)
	if fd >= 0 {
		unix.Close(fd)
	}
	if !errors.Is(err, ErrJournal) || !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("MapCreate journaled to /dev/full: %d, %v, want ErrJournal with ENOSPC", fd, err)
	}
	if n := attrSize.Load(); n != 0 {
		t.Fatalf("sizeof(union bpf_attr) cached as %d from a probe the journal failed to record", n)
	}
	if _, err := kernelAttrSize(); err != nil {
		t.Fatal(err)
	}
}

// TestProgQueryFullAttr shows why every attr is passed whole, and that
// the kernel keeps to the size it is told of ours. BPF_PROG_QUERY writes
// prog_cnt (offset 24) back whatever size it is told: called raw with the
// attr cut at 24 bytes, it must overwrite the canary there. Through
// ProgQuery, told the kernel's own size, it must leave every byte of our
// attr past that size alone and write the results inside.
func TestProgQueryFullAttr(t *testing.T) {
	testutil.RequireRoot(t)
	cg, err := unix.Open(testutil.Cgroup2(t), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(cg)
	fill := func(b []byte) {
		for i := range b {
			b[i] = 0xa5
		}
	}
	canary := func(b []byte) bool { return bytes.Count(b, []byte{0xa5}) == len(b) }

	var short ProgQueryAttr
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&short)), AttrSize)
	fill(raw[24:])
	short.TargetFD, short.AttachType = uint32(cg), unix.BPF_CGROUP_INET_INGRESS
	if _, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_QUERY, uintptr(unsafe.Pointer(&short)), 24); errno != 0 {
		t.Fatalf("BPF_PROG_QUERY with a 24-byte attr: %v", errno)
	}
	if canary(raw[24:28]) {
		t.Fatal("the kernel no longer writes prog_cnt past a 24-byte attr: the reason for passing whole attrs is gone, update the docs")
	}

	attr := ProgQueryAttr{TargetFD: uint32(cg), AttachType: unix.BPF_CGROUP_INET_INGRESS, ProgCnt: 0xa5a5a5a5}
	raw = unsafe.Slice((*byte)(unsafe.Pointer(&attr)), AttrSize)
	size, _ := kernelAttrSize()
	fill(raw[size:])
	if err := ProgQuery(&attr); err != nil {
		t.Fatal(err)
	}
	if !canary(raw[size:]) {
		t.Fatalf("the kernel wrote past the %d bytes it was told", size)
	}
	if attr.ProgCnt != 0 {
		t.Fatalf("prog_cnt %#x: the kernel did not write its answer into the attr", attr.ProgCnt)
	}
	t.Logf("kernel attr size %d, revision %d", size, attr.Revision)
}

// TestCStringsStopAtNUL: the journal reads a string only up to its NUL. A
// "GPL" ending a page whose next page is PROT_NONE faulted when the journal
// read 256 bytes whatever the string's length.
func TestCStringsStopAtNUL(t *testing.T) {
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[page:], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	copy(mem[page-4:], "GPL\x00")
	if got := cString(NewPointer(unsafe.Pointer(&mem[page-4]))); got != "GPL" {
		t.Errorf("cString = %q, want GPL", got)
	}
}

// TestCStrings: the journal's strings and object names end at the first
// NUL; a string with none in its first 256 bytes is cut there and marked.
func TestCStrings(t *testing.T) {
	long := strings.Repeat("a", 300)
	gpl, _ := StringPointer("GPL")
	lp, _ := StringPointer(long)
	if got := cString(gpl); got != "GPL" {
		t.Errorf("cString(GPL) = %q", got)
	}
	if got := cString(lp); got != long[:256]+"..." {
		t.Errorf("cString of 300 bytes = %q", got)
	}
	if got := cString(Pointer{}); got != "" {
		t.Errorf("cString(nil) = %q", got)
	}
	n, _ := NewObjName("ret0")
	full := ObjName([]byte("sixteen_bytes_xx"))
	if n.String() != "ret0" || full.String() != "sixteen_bytes_xx" {
		t.Errorf("ObjName strings %q, %q", n.String(), full.String())
	}
}
