package tool

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionLine: the version line of builds with and without VCS
// information, and of this test binary, is one line naming the tool.
func TestVersionLine(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	const path, version = "github.com/bpfkit/bpfkit", "v0.0.0-20261126144500-2c415a0abcde+dirty"
	main := debug.Module{Path: path, Version: version}
	modified := vcs("vcs.revision", "2c415a0abcdef", "vcs.modified", "true")
	clean := vcs("vcs.revision", "2c415a0abcdef", "vcs.modified", "false")
	for _, c := range []struct {
		info debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: main, Settings: modified},
			"dropmon " + path + " " + version + ", revision 2c415a0abcdef, modified, go1.26.8"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: main, Settings: clean},
			"dropmon " + path + " " + version + ", revision 2c415a0abcdef, go1.26.8"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: path, Version: "(devel)"}},
			"dropmon " + path + " (devel), no VCS revision recorded, go1.26.8"},
		{debug.BuildInfo{}, "dropmon, no VCS revision recorded"},
	} {
		if got := versionLine("dropmon", &c.info); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
	v := New("x", "test", "").Version()
	if !strings.HasPrefix(v, "x ") || strings.Contains(v, "\n") {
		t.Errorf("this binary's version: %q", v)
	}
}
