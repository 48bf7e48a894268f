package main

import "testing"

// TestCommandWords: a word cut short, mistyped or unknown finds the
// command meant, a suggestion, or none.
func TestCommandWords(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"prog", "prog"}, {"prgo", "prog"}, {"lst", "list"},
		{"fetaures", "features"}, {"nope", "top"},
	} {
		want := map[string]int{"prog": 0, "prgo": 1, "lst": 1, "fetaures": 1, "nope": 2}[c.a]
		if d := editDistance(c.a, c.b); d != want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, d, want)
		}
	}
	words := []string{"prog", "map", "link", "perf", "probes", "features", "top"}
	for typed, want := range map[string]string{
		"prgo": "prog", "fetures": "features", "nope": "",
		"tpo": "top", "xyz": "", "mpa": "map",
	} {
		if got := closest(typed, words); got != want {
			t.Errorf("closest(%q) = %q, want %q", typed, got, want)
		}
	}
	prefixes := map[string]string{"pro": "", "prob": "probes", "f": "features", "p": ""}
	for typed, want := range prefixes {
		if got := prefixOf(typed, words); got != want {
			t.Errorf("prefixOf(%q) = %q, want %q", typed, got, want)
		}
	}
	_, err := pick("p", words, "")
	if err == nil || err.Error() != `usage: ambiguous command "p": prog, perf or probes?` {
		t.Errorf("pick(p): %v", err)
	}
}
