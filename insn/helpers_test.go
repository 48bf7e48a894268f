package insn

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestHelperNumbering(t *testing.T) {
	spot := []struct {
		h    Helper
		id   int32
		name string
	}{
		{BPF_FUNC_unspec, 0, "bpf_unspec"},
		{BPF_FUNC_map_lookup_elem, 1, "bpf_map_lookup_elem"},
		{BPF_FUNC_probe_read, 4, "bpf_probe_read"},
		{BPF_FUNC_tail_call, 12, "bpf_tail_call"},
		{BPF_FUNC_perf_event_output, 25, "bpf_perf_event_output"},
		{BPF_FUNC_ringbuf_output, 130, "bpf_ringbuf_output"},
		{BPF_FUNC_get_attach_cookie, 174, "bpf_get_attach_cookie"},
		{BPF_FUNC_user_ringbuf_drain, 209, "bpf_user_ringbuf_drain"},
		{BPF_FUNC_cgrp_storage_get, 210, "bpf_cgrp_storage_get"},
		{BPF_FUNC_cgrp_storage_delete, 211, "bpf_cgrp_storage_delete"},
	}
	for _, s := range spot {
		if int32(s.h) != s.id || s.h.String() != s.name {
			t.Errorf("%s: id %d, want %d; String %q", s.name, s.h, s.id, s.h.String())
		}
		for _, name := range []string{s.name, strings.TrimPrefix(s.name, "bpf_")} {
			if h, ok := HelperByName(name); !ok || h != s.h {
				t.Errorf("HelperByName(%q) = %d, %v", name, h, ok)
			}
		}
	}
	if len(helperNames()) != 212 || numHelpers != 212 {
		t.Errorf("%d helper names and numHelpers %d, want 212", len(helperNames()), numHelpers)
	}
	for _, bad := range []string{"", "bpf_", "bpf_nope", "map_lookup"} {
		if h, ok := HelperByName(bad); ok {
			t.Errorf("HelperByName(%q) = %d", bad, h)
		}
	}
	for _, h := range []Helper{-1, 212, 1 << 20} {
		if got, want := h.String(), "unknown#"+strconv.Itoa(int(h)); got != want {
			t.Errorf("String(%d) = %q, want %q", h, got, want)
		}
	}
}

// TestHelpersMatchHeader parses ___BPF_FUNC_MAPPER / __BPF_FUNC_MAPPER in
// the installed uapi header and checks every FN(name) against its position.
func TestHelpersMatchHeader(t *testing.T) {
	const path = "/usr/include/linux/bpf.h"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("no uapi header: %v", err)
	}
	text := string(data)
	start := regexp.MustCompile(`#define _{2,3}BPF_FUNC_MAPPER\(FN(, ctx)?\)`).FindStringIndex(text)
	if start == nil {
		t.Fatalf("%s: no BPF_FUNC_MAPPER", path)
	}
	body := text[start[1]:]
	if end := strings.Index(body, "/* */"); end >= 0 {
		body = body[:end]
	}
	// Newer headers number explicitly: FN(name, 42, ##ctx).
	fn := regexp.MustCompile(`FN\((\w+)(?:,\s*(\d+))?`)
	matches := fn.FindAllStringSubmatch(body, -1)
	if len(matches) < 200 {
		t.Fatalf("%s: only %d helpers parsed", path, len(matches))
	}
	for pos, m := range matches {
		id := pos
		if m[2] != "" {
			id, _ = strconv.Atoi(m[2])
		}
		h, ok := HelperByName(m[1])
		if !ok {
			t.Errorf("helper %s (%d) missing", m[1], id)
			continue
		}
		if int(h) != id {
			t.Errorf("helper %s: id %d, header says %d", m[1], h, id)
		}
		if got := h.String(); got != "bpf_"+m[1] {
			t.Errorf("Helper(%d).String() = %q, want bpf_%s", id, got, m[1])
		}
	}
	t.Logf("%d helpers checked against %s", len(matches), path)
}
