package main

import (
	"strconv"
	"strings"
	"testing"
)

// TestQuoteArg: a string argument is written as it is when it reads back
// as one value among spaced ones, else quoted (and then it reads back
// with strconv.Unquote): Python's "<frozen importlib._bootstrap>" is one
// value, not two; a newline or an escape sequence never reaches the
// terminal.
func TestQuoteArg(t *testing.T) {
	for s, want := range map[string]string{
		"/tmp/x.py":                     "/tmp/x.py",
		"<listcomp>":                    "<listcomp>",
		"<frozen importlib._bootstrap>": `"<frozen importlib._bootstrap>"`,
		"":                              `""`,
		`say "hi"`:                      `"say \"hi\""`,
		`C:\x`:                          `"C:\\x"`,
		"a\nb":                          `"a\nb"`,
		"\x1b[31mred":                   `"\x1b[31mred"`,
		"\xff\xfe":                      `"\xff\xfe"`,
		"tab\there":                     `"tab\there"`,
		"é":                             "é",
	} {
		got := quoteArg(s)
		if got != want {
			t.Errorf("quoteArg(%q) = %s, want %s", s, got, want)
		}
		back, err := strconv.Unquote(got)
		if strings.HasPrefix(got, `"`) && (err != nil || back != s) {
			t.Errorf("quoteArg(%q) = %s reads back as %q, %v", s, got, back, err)
		}
	}
}
