package main

import (
	"strconv"
	"strings"
)

// text is an argument as the text output writes it: a number in decimal,
// a string as it is.
func (v value) text() string {
	switch {
	case v.isStr:
		return v.str
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
