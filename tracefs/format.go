package tracefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Field is one field of a tracepoint's record, as its format file says.
type Field struct {
	Name   string
	Type   string // the C type, "unsigned short", "char[16]", "__data_loc char[]"
	Offset int    // from the start of the record the program's context points at
	Size   int
	Signed bool
	// DataLoc is true for a __data_loc field: the 4 bytes at Offset hold
	// the data's offset (low 16 bits) and length (high 16 bits) within
	// the record.
	DataLoc bool
}

// Format is a tracepoint's events/<group>/<name>/format.
type Format struct {
	Group, Name string
	ID          uint64
	Fields      []Field // common fields first
	PrintFmt    string
	// Symbols maps a field to its __print_symbolic table in the print
	// format: kfree_skb's reason -> {2: "NOT_SPECIFIED", ...}.
	Symbols map[string]map[uint64]string
}

// Field returns the named field, or an error naming the tracepoint and the
// fields it has.
func (f *Format) Field(name string) (Field, error) {
	for _, fl := range f.Fields {
		if fl.Name == name {
			return fl, nil
		}
	}
	names := make([]string, 0, len(f.Fields))
	for _, fl := range f.Fields {
		names = append(names, fl.Name)
	}
	return Field{}, fmt.Errorf("tracepoint %s:%s has no field %q (it has %s)", f.Group, f.Name, name, strings.Join(names, ", "))
}

// TracepointID reads events/<group>/<name>/id.
func TracepointID(group, name string) (uint64, error) {
	if err := validLookup(group, name); err != nil {
		return 0, err
	}
	p, err := file("events", group, name, "id")
	if err != nil {
		return 0, err
	}
	return readID(p, group+":"+name)
}

func readID(path, what string) (uint64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("tracepoint %s: %w", what, errors.Join(ErrNotExist, err))
	}
	if err != nil {
		return 0, fmt.Errorf("tracepoint %s: %w", what, err)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("tracepoint %s: bad id %q", what, b)
	}
	return id, nil
}

// TracepointFormat reads and parses events/<group>/<name>/format.
func TracepointFormat(group, name string) (*Format, error) {
	if err := validLookup(group, name); err != nil {
		return nil, err
	}
	p, err := file("events", group, name, "format")
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("tracepoint %s:%s: %w", group, name, errors.Join(ErrNotExist, err))
	}
	if err != nil {
		return nil, err
	}
	f, err := ParseFormat(string(b))
	if err != nil {
		return nil, fmt.Errorf("tracepoint %s:%s: %w", group, name, err)
	}
	f.Group = group
	return f, nil
}

// validLookup accepts tracepoint group and event names that stay one
// directory each under events/ (groups like 9p start with a digit).
func validLookup(names ...string) error {
	for _, n := range names {
		if n == "" || n == "." || n == ".." || len(n) > 255 || strings.ContainsAny(n, "/ \t\n\r\x00") {
			return fmt.Errorf("%w: tracepoint name %q", ErrInvalid, n)
		}
	}
	return nil
}

var fieldLine = regexp.MustCompile(`^\s*field:(.+);\s*offset:(\d+);\s*size:(\d+);\s*signed:(\d+);`)

// ParseFormat parses the text of a format file.
func ParseFormat(text string) (*Format, error) {
	f := &Format{Symbols: map[string]map[uint64]string{}}
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
			m := fieldLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			fl, err := parseField(m)
			if err != nil {
				return nil, fmt.Errorf("%w in %q", err, line)
			}
			f.Fields = append(f.Fields, fl)
		}
	}
	if len(f.Fields) == 0 {
		return nil, errors.New("format has no fields")
	}
	syms, err := parseSymbolic(f.PrintFmt)
	if err != nil {
		return nil, err
	}
	f.Symbols = syms
	return f, nil
}

// parseField splits "unsigned char name[16]" into type and name.
func parseField(m []string) (Field, error) {
	decl := strings.TrimSpace(m[1])
	fl := Field{Signed: m[4] == "1"}
	fl.Offset, _ = strconv.Atoi(m[2])
	fl.Size, _ = strconv.Atoi(m[3])
	fl.DataLoc = strings.HasPrefix(decl, "__data_loc ")
	i := strings.LastIndexAny(decl, " *")
	if i < 0 {
		return fl, errors.New("field without a type")
	}
	name, typ := decl[i+1:], strings.TrimSpace(decl[:i+1])
	if j := strings.IndexByte(name, '['); j >= 0 { // char comm[16]: the array belongs to the type
		name, typ = name[:j], typ+" "+name[j:]
	}
	fl.Name, fl.Type = name, strings.TrimSpace(typ)
	if fl.Name == "" {
		return fl, errors.New("field without a name")
	}
	return fl, nil
}

var (
	symbolicCall = regexp.MustCompile(`__print_symbolic\(\s*REC->(\w+)\s*,`)
	symbolPair   = regexp.MustCompile(`^\s*\{\s*(-?(?:0x[0-9a-fA-F]+|\d+))\s*,\s*"([^"]*)"\s*\}\s*,?`)
)

// parseSymbolic reads every __print_symbolic(REC->field, { value, "NAME" },
// ...) table of a print format.
func parseSymbolic(pf string) (map[string]map[uint64]string, error) {
	out := map[string]map[uint64]string{}
	for _, loc := range symbolicCall.FindAllStringSubmatchIndex(pf, -1) {
		field := pf[loc[2]:loc[3]]
		table := map[uint64]string{}
		rest := pf[loc[1]:]
		for {
			m := symbolPair.FindStringSubmatch(rest)
			if m == nil {
				break
			}
			v, err := strconv.ParseInt(m[1], 0, 64)
			if err != nil {
				return nil, fmt.Errorf("__print_symbolic of %s: bad value %q", field, m[1])
			}
			table[uint64(v)] = m[2]
			rest = rest[len(m[0]):]
		}
		if len(table) == 0 {
			return nil, fmt.Errorf("__print_symbolic of %s: no { value, \"name\" } pairs", field)
		}
		out[field] = table
	}
	return out, nil
}
