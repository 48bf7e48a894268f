package tracefs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/tracefs"
)

// The format parser was written with regexp, which weighs on every tool
// that reads a tracepoint. oracleParseFormat is that parser, kept here to
// hold the new one to the same answers, with two changes: an offset or size
// too large for an int is an error, not a silent 0; and a __print_symbolic
// pair whose value is not a number (an enum name the kernel left, as in
// tcp_send_reset) is skipped, where it failed the whole format.
var (
	oracleFieldLine    = regexp.MustCompile(`^\s*field:(.+);\s*offset:(\d+);\s*size:(\d+);\s*signed:(\d+);`)
	oracleSymbolicCall = regexp.MustCompile(`__print_symbolic\(\s*REC->(\w+)\s*,`)
	oracleSymbolPair   = regexp.MustCompile(`^\s*\{\s*([^,"{}]*?)\s*,\s*"([^"]*)"\s*\}\s*,?`)
)

func oracleParseFormat(text string) (*tracefs.Format, error) {
	f := &tracefs.Format{}
	for line := range strings.SplitSeq(text, "\n") {
		switch {
		case strings.HasPrefix(line, "name: "):
			f.Name = strings.TrimSpace(line[len("name: "):])
		case strings.HasPrefix(line, "ID: "):
			id, err := strconv.ParseUint(strings.TrimSpace(line[len("ID: "):]), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad ID line %q", line)
			}
			f.ID = id
		case strings.HasPrefix(line, "print fmt: "):
			f.PrintFmt = line[len("print fmt: "):]
		default:
			m := oracleFieldLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			decl := strings.TrimSpace(m[1])
			fl := tracefs.Field{Signed: m[4] == "1"}
			var err1, err2 error
			fl.Offset, err1 = strconv.Atoi(m[2])
			fl.Size, err2 = strconv.Atoi(m[3])
			if err1 != nil || err2 != nil {
				return nil, errors.New("offset or size out of range")
			}
			fl.DataLoc = strings.HasPrefix(decl, "__data_loc ")
			i := strings.LastIndexAny(decl, " *")
			if i < 0 {
				return nil, errors.New("field without a type")
			}
			name, typ := decl[i+1:], strings.TrimSpace(decl[:i+1])
			if j := strings.IndexByte(name, '['); j >= 0 {
				name, typ = name[:j], typ+" "+name[j:]
			}
			fl.Name, fl.Type = name, strings.TrimSpace(typ)
			if fl.Name == "" {
				return nil, errors.New("field without a name")
			}
			f.Fields = append(f.Fields, fl)
		}
	}
	if len(f.Fields) == 0 {
		return nil, errors.New("format has no fields")
	}
	f.Symbols = map[string]map[uint64]string{}
	for _, loc := range oracleSymbolicCall.FindAllStringSubmatchIndex(f.PrintFmt, -1) {
		field := f.PrintFmt[loc[2]:loc[3]]
		table := map[uint64]string{}
		rest := f.PrintFmt[loc[1]:]
		for {
			m := oracleSymbolPair.FindStringSubmatch(rest)
			if m == nil {
				break
			}
			if v, err := strconv.ParseInt(m[1], 0, 64); err == nil {
				table[uint64(v)] = m[2]
			} else if v, err := strconv.ParseUint(m[1], 0, 64); err == nil {
				table[v] = m[2]
			}
			rest = rest[len(m[0]):]
		}
		if len(table) > 0 {
			f.Symbols[field] = table
		}
	}
	return f, nil
}

func sameParse(t *testing.T, text string) {
	t.Helper()
	got, err := tracefs.ParseFormat(text)
	want, werr := oracleParseFormat(text)
	if (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseFormat(%q)\n= %+v, %v\nwant %+v, %v", text, got, err, want, werr)
	}
}

// TestParseEveryFormat parses every format file of this kernel, each of
// which must parse, as the regexp parser did.
func TestParseEveryFormat(t *testing.T) {
	p, err := tracefs.Path()
	if err != nil {
		t.Skip(err)
	}
	files, _ := filepath.Glob(p + "/events/*/*/format")
	if len(files) < 100 {
		t.Skipf("only %d format files under %s/events", len(files), p)
	}
	symbolic := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a probe event another test removed meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		f, err := tracefs.ParseFormat(string(b))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		symbolic += len(f.Symbols)
		sameParse(t, string(b))
	}
	t.Logf("%d formats, %d __print_symbolic tables", len(files), symbolic)
}

func FuzzParseFormat(f *testing.F) {
	f.Add(sampleFormat)
	f.Add("\tfield:int x;\toffset:0;\tsize:4;\tsigned:1;\nprint fmt: __print_symbolic(REC->x, {0x1,\"a\"},{ -2 , \"b\" } ) __print_symbolic( REC->y ,{0,\"\"}")
	f.Add("\tfield:a;b; offset:1; size:2; signed:0;x; offset:3;\tsize:4;\tsigned:1;")
	f.Fuzz(func(t *testing.T, text string) { sameParse(t, text) })
}
