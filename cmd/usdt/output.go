package main

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// text is an argument as the text output writes it: a number in decimal,
// a string as it is unless it would not read back as one value.
func (v value) text() string {
	switch {
	case v.isStr:
		return quoteArg(v.str)
	case v.signed:
		return strconv.FormatInt(int64(v.num), 10)
	}
	return strconv.FormatUint(v.num, 10)
}

// json is an argument as -json writes it: a JSON string or number.
func (v value) json() any {
	switch {
	case v.isStr:
		return v.str
	case v.signed:
		return int64(v.num)
	}
	return v.num
}

// label is an argument as a Prometheus label value: a number in decimal,
// a string as it is (the exposition escapes it).
func (v value) label() string {
	if v.isStr {
		return v.str
	}
	return v.text()
}

// texts is the arguments as the text output writes them, spaced.
func texts(vs []value) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.text()
	}
	return strings.Join(out, " ")
}

// jsons is the arguments as -json writes them, an array.
func jsons(vs []value) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v.json()
	}
	return out
}

// quoteArg is s, or s quoted as Go quotes strings where it would not read
// back as one value among spaced ones: empty, or holding a space, a
// quote, a backslash, a character that is not printable (a newline, an
// escape sequence, which would reach the terminal) or bytes that are not
// UTF-8. "<frozen importlib._bootstrap>", a Python module's file name,
// is quoted.
func quoteArg(s string) string {
	plain := s != "" && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
		return r == '"' || r == '\\' || unicode.IsSpace(r) || !unicode.IsPrint(r)
	})
	if plain {
		return s
	}
	return strconv.Quote(s)
}

// printable is s, or s quoted as Go quotes strings when it holds a
// character that is not printable or bytes that are not UTF-8: what a
// file says (a call site's arguments) written to a terminal.
func printable(s string) string {
	unprintable := func(r rune) bool { return !unicode.IsPrint(r) }
	if utf8.ValidString(s) && !strings.ContainsFunc(s, unprintable) {
		return s
	}
	return strconv.Quote(s)
}
