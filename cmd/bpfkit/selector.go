package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

// parse parses the command's flags and arguments and returns the ids of
// the objects they name, nil for every one (or for a command that takes
// none).
func (c *command) parse(t *tool.Tool, args []string) ([]uint32, error) {
	if c.object == "" {
		return nil, t.Parse(args)
	}
	if err := t.TakesArgs().Parse(args); err != nil {
		return nil, err
	}
	pos := t.Args
	if c.dump && len(pos) > 0 {
		switch pos[0] {
		case "xlated":
			pos = pos[1:]
		case "jited":
			return nil, tool.Usagef("jited: bpfkit prints the instructions as the " +
				"verifier rewrote them (xlated), not the machine code the JIT made of them")
		}
	}
	if len(pos) == 0 {
		if c.optional {
			return nil, nil
		}
		object := strings.ToUpper(c.object)
		return nil, tool.Usagef("want a %s (usage: %s %s)", object, t.Name, c.usage)
	}
	sel, pos, err := parseSelector(c.object, pos)
	if err != nil {
		return nil, err
	}
	if c.dump && len(pos) > 0 && pos[0] == "opcodes" { // bpftool's word for -opcodes
		opcodes, pos = true, pos[1:]
	}
	if len(pos) > 0 {
		return nil, tool.Usagef("unexpected argument %q (usage: %s %s)", pos[0], t.Name, c.usage)
	}
	ids, err := sel.resolve()
	if err == nil && len(ids) > 1 && !c.optional {
		err = fmt.Errorf("%s names %s %s: choose one by id",
			sel, plural(c.object), joinIDs(ids, ", "))
	}
	return ids, err
}

// selector names objects as bpftool's PROG and MAP do: by id, name, tag
// (programs only) or the path of a pin.
type selector struct {
	object string // "prog" or "map"
	by     string // "id", "name", "tag" or "pinned"
	value  string
	id     uint32 // by id
}

func (s selector) String() string { return fmt.Sprintf("%s %q", s.by, s.value) }

// parseSelector reads a selector at the start of args and returns what
// follows it: "12" and "id=12" (bpfkit's forms), "id 12", "name NAME",
// "tag TAG" and "pinned PATH" (bpftool's).
func parseSelector(object string, args []string) (selector, []string, error) {
	s := selector{object: object, by: "id", value: strings.TrimPrefix(args[0], "id="), id: 0}
	rest := args[1:]
	switch args[0] {
	case "id", "name", "tag", "pinned":
		if args[0] == "tag" && object != "prog" {
			return s, nil, tool.Usagef("a %s has no tag: name it by id, name or pinned", object)
		}
		if len(args) < 2 {
			return s, nil, tool.Usagef("%s %s: missing its value", object, args[0])
		}
		s.by, s.value, rest = args[0], args[1], args[2:]
	}
	if s.by != "id" {
		return s, rest, nil
	}
	id, err := strconv.ParseUint(s.value, 10, 32)
	if err != nil || id == 0 {
		return s, nil, tool.Usagef("ID %q: want a number from 1 to %d", s.value, uint32(1<<32-1))
	}
	s.id = uint32(id)
	return s, rest, nil
}

// resolve is the ids of the objects the selector names; none is an error.
func (s selector) resolve() ([]uint32, error) {
	switch s.by {
	case "id":
		// Looked up now, so that an id that names nothing says so; an
		// object that goes away after this is skipped, as in a walk.
		return []uint32{s.id}, s.exists(s.id)
	case "pinned":
		id, err := pinnedID(s.object, s.value)
		return []uint32{id}, err
	}
	next := prog.NextID
	if s.object == "map" {
		next = mapfd.NextID
	}
	var ids []uint32
	err := each(next, nil, func(id uint32) error {
		match, err := s.matches(id)
		if match {
			ids = append(ids, id)
		}
		return err
	})
	if err == nil && len(ids) == 0 {
		err = fmt.Errorf("no %s with %s", noun(s.object), s)
	}
	return ids, err
}

// exists says, as an error, that there is no object with the id id.
func (s selector) exists(id uint32) error {
	var err error
	if s.object == "map" {
		var m *mapfd.Map
		if m, err = mapfd.OpenID(id); err == nil {
			m.Close()
		}
	} else {
		var p *prog.Program
		if p, err = prog.OpenID(id); err == nil {
			p.Close()
		}
	}
	if errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("no %s with %s: %w", noun(s.object), s, err)
	}
	return err
}

// matches says whether the object id has the selector's name or tag.
func (s selector) matches(id uint32) (bool, error) {
	if s.object == "map" {
		m, err := mapfd.OpenID(id)
		if err != nil {
			return false, err
		}
		defer m.Close()
		return m.Name() == s.value, nil
	}
	p, err := prog.OpenID(id)
	if err != nil {
		return false, err
	}
	defer p.Close()
	if s.by == "name" {
		return p.Name() == s.value, nil
	}
	i, err := p.Info()
	return err == nil && i.Tag == strings.ToLower(s.value), err
}

// pinnedID is the id of the program or map pinned at path.
func pinnedID(object, path string) (uint32, error) {
	if object == "map" {
		m, err := mapfd.Open(path)
		if err != nil {
			return 0, err
		}
		defer m.Close()
		i, err := m.Info()
		if err != nil {
			return 0, err
		}
		return i.ID, nil
	}
	p, err := prog.Open(path)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	i, err := p.Info()
	if err != nil {
		return 0, err
	}
	return i.ID, nil
}

// each calls fn for each of ids, or for every object when ids is nil,
// walking the kernel's ids with next. An object that went away meanwhile
// (fn's ENOENT) is skipped: one of ids went away after its selector found
// it, as one in a walk after next found it.
func each(next func(uint32) (uint32, error), ids []uint32, fn func(uint32) error) error {
	if ids != nil {
		for _, id := range ids {
			if err := fn(id); err != nil && !errors.Is(err, unix.ENOENT) {
				return err
			}
		}
		return nil
	}
	for id := uint32(0); ; {
		var err error
		if id, err = next(id); err != nil || id == 0 {
			return err
		}
		if err := fn(id); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
}

// noun is "program" or "map".
func noun(object string) string {
	if object == "prog" {
		return "program"
	}
	return object
}

// plural is "programs" or "maps".
func plural(object string) string {
	if object == "prog" {
		return "programs"
	}
	return object + "s"
}
