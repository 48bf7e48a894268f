package sys

import (
	"bytes"
	"encoding/binary"
	"os"
	"reflect"
	"testing"
	"unsafe"
)

// Offsets of struct members in union bpf_attr and the info structs, as gcc
// computes them from the uapi header (linux 6.1 headers; later fields from
// the 6.18 kernel's BTF).
var wantOffsets = map[string]uintptr{
	"MapCreateAttr.MapName": 28, "MapCreateAttr.BTFVmlinuxValueTypeID": 60, "MapCreateAttr.MapExtra": 64,
	"MapCreateAttr.ValueTypeBTFObjFD": 72, "MapCreateAttr.MapTokenFD": 76,
	"MapElemAttr.Key": 8, "MapElemAttr.Value": 16, "MapElemAttr.Flags": 24,
	"MapBatchAttr.Count": 32, "MapBatchAttr.MapFD": 36, "MapBatchAttr.Flags": 48,
	"ProgLoadAttr.Insns": 8, "ProgLoadAttr.LogBuf": 32, "ProgLoadAttr.KernVersion": 40, "ProgLoadAttr.ProgName": 48,
	"ProgLoadAttr.ExpectedAttachType": 68, "ProgLoadAttr.FuncInfo": 80, "ProgLoadAttr.LineInfo": 96,
	"ProgLoadAttr.AttachProgFD": 112, "ProgLoadAttr.FDArray": 120, "ProgLoadAttr.CoreReloRecSize": 136,
	"ProgLoadAttr.LogTrueSize": 140, "ProgLoadAttr.ProgTokenFD": 144, "ProgLoadAttr.FDArrayCnt": 148,
	"ObjAttr.BPFFD": 8, "ObjAttr.FileFlags": 12, "ObjAttr.PathFD": 16,
	"ProgQueryAttr.ProgIDs": 16, "ProgQueryAttr.ProgCnt": 24, "ProgQueryAttr.ProgAttachFlags": 32,
	"ProgQueryAttr.Revision": 56,
	"TestRunAttr.DataIn":     16, "TestRunAttr.Repeat": 32, "TestRunAttr.CtxIn": 48, "TestRunAttr.CtxOut": 56,
	"TestRunAttr.Flags": 64, "TestRunAttr.BatchSize": 72,
	"GetIDAttr.NextID": 4, "GetIDAttr.OpenFlags": 8,
	"InfoAttr.InfoLen": 4, "InfoAttr.Info": 8,
	"RawTracepointAttr.ProgFD": 8, "RawTracepointAttr.Cookie": 16,
	"LinkCreateAttr.TargetFD": 4, "LinkCreateAttr.AttachType": 8, "LinkCreateAttr.Flags": 12, "LinkCreateAttr.Cookie": 16,
	"EnableStatsAttr.Type":    0,
	"ProgInfo.JitedProgInsns": 24, "ProgInfo.LoadTime": 40, "ProgInfo.MapIDs": 56, "ProgInfo.Name": 64,
	"ProgInfo.Ifindex": 80, "ProgInfo.NetnsDev": 88, "ProgInfo.JitedKsyms": 112, "ProgInfo.BTFID": 128,
	"ProgInfo.FuncInfo": 136, "ProgInfo.LineInfo": 152, "ProgInfo.JitedLineInfo": 160, "ProgInfo.NrProgTags": 180,
	"ProgInfo.ProgTags": 184, "ProgInfo.RunTimeNs": 192, "ProgInfo.RecursionMisses": 208,
	"ProgInfo.VerifiedInsns": 216, "ProgInfo.AttachBTFID": 224,
	"MapInfo.Name": 24, "MapInfo.NetnsDev": 48, "MapInfo.BTFID": 64, "MapInfo.MapExtra": 80, "MapInfo.Hash": 88,
	"LinkInfo.Union": 16,
}

var layoutTypes = []any{MapCreateAttr{}, MapElemAttr{}, MapBatchAttr{}, ProgLoadAttr{}, ObjAttr{}, ProgQueryAttr{},
	TestRunAttr{}, GetIDAttr{}, InfoAttr{}, RawTracepointAttr{}, LinkCreateAttr{}, LinkDetachAttr{}, EnableStatsAttr{},
	ProgInfo{}, MapInfo{}, LinkInfo{}}

func TestLayout(t *testing.T) {
	seen := 0
	for _, v := range layoutTypes {
		typ := reflect.TypeOf(v)
		if typ.Name() != "ProgInfo" && typ.Name() != "MapInfo" && typ.Name() != "LinkInfo" && typ.Size() != AttrSize {
			t.Errorf("%s is %d bytes, want the full attr, %d", typ.Name(), typ.Size(), AttrSize)
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			if want, ok := wantOffsets[typ.Name()+"."+f.Name]; ok {
				seen++
				if f.Offset != want {
					t.Errorf("%s.%s at offset %d, the uapi header says %d", typ.Name(), f.Name, f.Offset, want)
				}
			}
		}
	}
	if seen != len(wantOffsets) {
		t.Errorf("checked %d offsets of %d: a field was renamed", seen, len(wantOffsets))
	}
	for name, want := range map[string]uintptr{"ProgInfo": 232, "MapInfo": 104, "LinkInfo": 64} {
		for _, v := range layoutTypes {
			if typ := reflect.TypeOf(v); typ.Name() == name && typ.Size() != want {
				t.Errorf("%s is %d bytes, the 6.18 kernel's is %d", name, typ.Size(), want)
			}
		}
	}
	if unsafe.Sizeof(Pointer{}) != 8 {
		t.Fatal("Pointer must be 8 bytes (64-bit platforms only)")
	}
}

// TestAttrSizeCoversKernel reads the running kernel's BTF and checks that
// AttrSize is at least its sizeof(union bpf_attr), so the whole of what the
// kernel may read or write is ours.
func TestAttrSizeCoversKernel(t *testing.T) {
	raw, err := os.ReadFile("/sys/kernel/btf/vmlinux")
	if err != nil {
		t.Skipf("no kernel BTF to read union bpf_attr from: %v", err)
	}
	size, ok := btfTypeSize(t, raw, 5 /* BTF_KIND_UNION */, "bpf_attr")
	if !ok {
		t.Fatal("union bpf_attr not found in the kernel's BTF")
	}
	t.Logf("kernel sizeof(union bpf_attr) = %d, AttrSize = %d", size, AttrSize)
	if size > AttrSize {
		t.Fatalf("this kernel's union bpf_attr is %d bytes, larger than AttrSize %d", size, AttrSize)
	}
}

// btfTypeSize walks the BTF type section for a struct or union by name.
func btfTypeSize(t *testing.T, raw []byte, kind uint32, name string) (uint32, bool) {
	le := binary.LittleEndian
	if len(raw) < 24 || le.Uint16(raw) != 0xeb9f {
		t.Fatal("not little-endian BTF")
	}
	hdrLen := le.Uint32(raw[4:])
	typeOff, typeLen, strOff := le.Uint32(raw[8:]), le.Uint32(raw[12:]), le.Uint32(raw[16:])
	types := raw[hdrLen+typeOff : hdrLen+typeOff+typeLen]
	strs := raw[hdrLen+strOff:]
	for off := uint32(0); off+12 <= uint32(len(types)); {
		nameOff, info, size := le.Uint32(types[off:]), le.Uint32(types[off+4:]), le.Uint32(types[off+8:])
		k, vlen := (info>>24)&0x1f, info&0xffff
		if k == kind {
			n := strs[nameOff:]
			if i := bytes.IndexByte(n, 0); string(n[:i]) == name {
				return size, true
			}
		}
		off += 12
		switch k {
		case 1, 14, 17: // int, var, decl_tag
			off += 4
		case 3: // array
			off += 12
		case 4, 5, 15, 19: // struct, union, datasec, enum64
			off += 12 * vlen
		case 6, 13: // enum, func_proto
			off += 8 * vlen
		}
	}
	return 0, false
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
	want, _ := btfTypeSize(t, raw, 5, "bpf_attr")
	if got := KernelAttrSize(); uint32(got) != min(want, AttrSize) {
		t.Fatalf("probed sizeof(union bpf_attr) = %d, BTF says %d", got, want)
	}
}
