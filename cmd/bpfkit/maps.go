package main

import (
	"fmt"
	"strings"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/mapfd"
)

// mapRec is a map as map list prints it, with bpftool's field names.
type mapRec struct {
	ID         uint32 `json:"id"`
	Type       string `json:"type"`
	Name       string `json:"name"`
	Flags      uint32 `json:"flags"`
	KeySize    uint32 `json:"bytes_key"`
	ValueSize  uint32 `json:"bytes_value"`
	MaxEntries uint32 `json:"max_entries"`
	Pids       []proc `json:"pids,omitempty"`
}

// listMaps prints the maps ids, or every map for nil.
func listMaps(t *tool.Tool, ids []uint32) error {
	held, err := holders()
	if err != nil {
		return err
	}
	return each(mapfd.NextID, ids, func(id uint32) error {
		m, err := mapfd.OpenID(id)
		if err != nil {
			return err
		}
		defer m.Close()
		i, err := m.Info()
		if err != nil {
			return err
		}
		r := mapRec{
			ID:         i.ID,
			Type:       i.Type.String(),
			Name:       i.Name,
			Flags:      i.Flags,
			KeySize:    i.KeySize,
			ValueSize:  i.ValueSize,
			MaxEntries: i.MaxEntries,
			Pids:       sortedProcs(held[key{"map", id}]),
		}
		if t.JSON {
			return t.Emit(r)
		}
		fmt.Fprintf(t.Stdout, "%d: %s  name %s  flags 0x%x\n", r.ID, r.Type, r.Name, r.Flags)
		fmt.Fprintf(t.Stdout, "\tkey %dB  value %dB  max_entries %d\n",
			r.KeySize, r.ValueSize, r.MaxEntries)
		printPids(t, r.Pids)
		return nil
	})
}

// dumpMap prints every key and value, as bpftool map dump does.
func dumpMap(t *tool.Tool, ids []uint32) error {
	id := ids[0]
	m, err := mapfd.OpenID(id)
	if err != nil {
		return err
	}
	defer m.Close()
	info, err := m.Info()
	if err != nil {
		return err
	}
	stride := (int(info.ValueSize) + 7) &^ 7 // per-CPU values are 8-byte aligned
	n := 0
	for k, v := range m.All(&err) {
		n++
		var cpus []map[string]any // bpftool's "values"
		for cpu := 0; info.Type.PerCPU() && cpu*stride < len(v); cpu++ {
			value := v[cpu*stride:][:info.ValueSize]
			cpus = append(cpus, map[string]any{"cpu": cpu, "value": value})
		}
		switch {
		case t.JSON && cpus != nil:
			for _, c := range cpus {
				c["value"] = hexBytes(c["value"].([]byte))
			}
			err = t.Emit(map[string]any{"key": hexBytes(k), "values": cpus})
		case t.JSON:
			err = t.Emit(map[string]any{"key": hexBytes(k), "value": hexBytes(v)})
		case cpus != nil:
			fmt.Fprintf(t.Stdout, "key:\n%s\n", spaced(k))
			for _, c := range cpus {
				value := c["value"].([]byte)
				fmt.Fprintf(t.Stdout, "value (CPU %02d): %s\n", c["cpu"], spaced(value))
			}
		default:
			fmt.Fprintf(t.Stdout, "key: %s  value: %s\n", spaced(k), spaced(v))
		}
		if err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	if !t.JSON {
		fmt.Fprintf(t.Stdout, "Found %d element%s\n", n, map[bool]string{true: "s"}[n != 1])
	}
	return nil
}

// hexBytes is b as bpftool's JSON has it: ["0x01", "0x02"].
func hexBytes(b []byte) []string {
	out := make([]string, len(b))
	for i, c := range b {
		out[i] = fmt.Sprintf("0x%02x", c)
	}
	return out
}

// spaced is b as bpftool's text has it: "01 02".
func spaced(b []byte) string {
	return strings.TrimSuffix(fmt.Sprintf("% x", b), " ")
}
