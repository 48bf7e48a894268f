package tracefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// Field is one field of a tracepoint's record, as its format file says.
type Field struct {
	Name   string // as the program's C struct would name it: "protocol"
	Type   string // the C type, "unsigned short", "char[16]", "__data_loc char[]"
	Offset int    // from the start of the record the program's context points at
	Size   int    // bytes
	Signed bool   // a signed integer type
	// DataLoc marks a __data_loc field: the u32 at Offset holds the data's
	// offset (low 16 bits) and length in the record.
	DataLoc bool
}

// Format is a tracepoint's events/<group>/<name>/format.
type Format struct {
	Group    string  // the tracepoint's group: "skb"
	Name     string  // the tracepoint's name: "kfree_skb"
	ID       uint64  // the tracepoint's id, a perf event's config
	Fields   []Field // common fields first
	PrintFmt string  // the print fmt line: how the kernel prints a record
	// Symbols maps a field to its __print_symbolic table: kfree_skb's
	// reason -> {2: "NOT_SPECIFIED", ...}, without values printed as names.
	Symbols map[string]map[uint64]string
}

// Field returns the named field, or an error naming the tracepoint and the
// fields it has.
func (f *Format) Field(name string) (Field, error) {
	var names []string
	for _, fl := range f.Fields {
		if fl.Name == name {
			return fl, nil
		}
		names = append(names, fl.Name)
	}
	return Field{}, fmt.Errorf("tracefs: tracepoint %s:%s has no field %q (it has %s)",
		f.Group, f.Name, name, strings.Join(names, ", "))
}

// TracepointID reads events/<group>/<name>/id.
func TracepointID(group, name string) (uint64, error) {
	b, err := readEvent(group, name, "id")
	if err != nil {
		return 0, err
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("tracefs: tracepoint %s:%s: bad id %q", group, name, b)
	}
	return id, nil
}

// TracepointFormat reads and parses events/<group>/<name>/format.
func TracepointFormat(group, name string) (*Format, error) {
	b, err := readEvent(group, name, "format")
	if err != nil {
		return nil, err
	}
	f, err := ParseFormat(string(b))
	if err != nil {
		return nil, wrap(err, "tracepoint %s:%s", group, name)
	}
	f.Group = group
	return f, nil
}

// readEvent reads events/<group>/<name>/<file>, for names that stay one
// directory under events/ (9p starts with a digit).
func readEvent(group, name, file string) ([]byte, error) {
	for _, n := range []string{group, name} {
		if n == "" || n == "." || n == ".." || len(n) > 255 || strings.ContainsAny(n, "/ \t\n\r\x00") {
			return nil, fmt.Errorf("%w: tracepoint name %q", ErrInvalid, n)
		}
	}
	p, err := Path()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p + "/events/" + group + "/" + name + "/" + file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: tracepoint %s:%s: %w", ErrNotExist, group, name, err)
	} else if err != nil {
		return nil, fmt.Errorf("tracefs: tracepoint %s:%s: %w", group, name, err)
	}
	return b, nil
}

// ParseFormat parses the text of a format file.
func ParseFormat(text string) (*Format, error) {
	f := &Format{}
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, "name: "); ok {
			f.Name = strings.TrimSpace(v)
		} else if v, ok := strings.CutPrefix(line, "ID: "); ok {
			id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("tracefs: bad ID line %q", line)
			}
			f.ID = id
		} else if v, ok := strings.CutPrefix(line, "print fmt: "); ok {
			f.PrintFmt = v
		} else if fl, ok, err := parseField(line); err != nil {
			return nil, fmt.Errorf("tracefs: %w in %q", err, line)
		} else if ok {
			f.Fields = append(f.Fields, fl)
		}
	}
	if len(f.Fields) == 0 {
		return nil, errors.New("tracefs: format has no fields")
	}
	f.Symbols = parseSymbolic(f.PrintFmt)
	return f, nil
}

// space is the format grammar's \s.
const space = " \t\n\f\r"

// fieldTail matches ";\s*offset:N;\s*size:N;\s*signed:N;" at the start of
// s, returning the three numbers.
func fieldTail(s string) (n [3]string, ok bool) {
	for i, key := range []string{"offset:", "size:", "signed:"} {
		if s, ok = strings.CutPrefix(s, ";"); ok {
			s, ok = strings.CutPrefix(strings.TrimLeft(s, space), key)
		}
		rest := strings.TrimLeft(s, "0123456789")
		if n[i], s = s[:len(s)-len(rest)], rest; !ok || n[i] == "" {
			return n, false
		}
	}
	return n, strings.HasPrefix(s, ";")
}

// parseField reads "\tfield:unsigned char name[16];\toffset:8;\tsize:16;
// \tsigned:0;" into a Field, the declaration ending at the last ';' that
// the rest follows; ok is false for a line that is no field.
func parseField(line string) (fl Field, ok bool, err error) {
	decl, found := strings.CutPrefix(strings.TrimLeft(line, space), "field:")
	if !found {
		return fl, false, nil
	}
	var n [3]string
	for i := len(decl) - 1; i > 0 && !ok; i-- {
		if decl[i] == ';' {
			if n, ok = fieldTail(decl[i:]); ok {
				decl = decl[:i]
			}
		}
	}
	if !ok {
		return fl, false, nil
	}
	if fl.Offset, err = strconv.Atoi(n[0]); err == nil {
		fl.Size, err = strconv.Atoi(n[1])
	}
	if err != nil {
		return fl, true, errors.New("offset or size out of range")
	}
	fl.Signed = n[2] == "1"
	decl = strings.TrimSpace(decl)
	fl.DataLoc = strings.HasPrefix(decl, "__data_loc ")
	i := strings.LastIndexAny(decl, " *")
	if i < 0 {
		return fl, true, errors.New("field without a type")
	}
	name, typ := decl[i+1:], strings.TrimSpace(decl[:i+1])
	if j := strings.IndexByte(name, '['); j >= 0 { // char comm[16]: the array belongs to the type
		name, typ = name[:j], typ+" "+name[j:]
	}
	fl.Name, fl.Type = name, strings.TrimSpace(typ)
	if fl.Name == "" {
		return fl, true, errors.New("field without a name")
	}
	return fl, true, nil
}

// parseSymbolic reads every __print_symbolic(REC->field, { value, "NAME" },
// ...) of a print format, leaving out pairs whose value the kernel left as
// a name (an enum without TRACE_DEFINE_ENUM, as tcp_send_reset's
// TCP_ESTABLISHED) or expression, and tables with no numbers.
func parseSymbolic(pf string) map[string]map[uint64]string {
	out := map[string]map[uint64]string{}
	const call = "__print_symbolic("
	for i := strings.Index(pf, call); i >= 0; i = strings.Index(pf, call) {
		pf = pf[i+len(call):]
		field, rest, ok := symbolicHead(pf)
		if !ok {
			continue
		}
		pf = rest
		table := map[uint64]string{}
		for v, name, after, ok := symbolPair(rest); ok; v, name, after, ok = symbolPair(after) {
			if n, err := strconv.ParseInt(v, 0, 64); err == nil {
				table[uint64(n)] = name
			} else if n, err := strconv.ParseUint(v, 0, 64); err == nil {
				table[n] = name
			}
		}
		if len(table) > 0 {
			out[field] = table
		}
	}
	return out
}

// symbolicHead matches "\s*REC->field\s*," after "__print_symbolic(".
func symbolicHead(s string) (field, rest string, ok bool) {
	s, ok = strings.CutPrefix(strings.TrimLeft(s, space), "REC->")
	i := 0
	for i < len(s) && isWord(s[i]) {
		i++
	}
	if !ok || i == 0 {
		return "", "", false
	}
	rest, ok = strings.CutPrefix(strings.TrimLeft(s[i:], space), ",")
	return s[:i], rest, ok
}

// symbolPair matches \s*{ value, "name" }\s*,?, value being up to the comma,
// without '"', '{' and '}', trimmed.
func symbolPair(s string) (value, name, rest string, ok bool) {
	if s, ok = strings.CutPrefix(strings.TrimLeft(s, space), "{"); !ok {
		return
	}
	s = strings.TrimLeft(s, space)
	i := strings.IndexAny(s, `,"{}`)
	if i < 0 || s[i] != ',' {
		return "", "", "", false
	}
	value = strings.TrimRight(s[:i], space)
	if s, ok = strings.CutPrefix(strings.TrimLeft(s[i+1:], space), `"`); !ok {
		return
	}
	j := strings.IndexByte(s, '"')
	if j < 0 {
		return "", "", "", false
	}
	name, s = s[:j], s[j+1:]
	if s, ok = strings.CutPrefix(strings.TrimLeft(s, space), "}"); !ok {
		return
	}
	s, _ = strings.CutPrefix(strings.TrimLeft(s, space), ",")
	return value, name, s, true
}
