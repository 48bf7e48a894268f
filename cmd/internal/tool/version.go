package tool

import (
	"runtime/debug"
	"strings"
)

// Version is the tool's version on one line: its name, the module's
// version and the VCS revision it was built from, as the go command
// recorded them in the binary, and the Go release that built it.
func (t *Tool) Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return t.Name + ": no build information in the binary"
	}
	return versionLine(t.Name, info)
}

// versionLine is Version's line for the build information info:
//
//	dropmon github.com/bpfkit/bpfkit v0.0.0-20261126144500-2c415a0abcde+dirty,
//	revision 2c415a0abcde..., modified, go1.26.8
//
// (on one line). A build without VCS information (go build -buildvcs=false,
// or outside a checkout) says so instead of a revision.
func versionLine(name string, info *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	fields := []string{strings.TrimSpace(name + " " + info.Main.Path + " " + info.Main.Version)}
	switch rev := settings["vcs.revision"]; {
	case rev == "":
		fields = append(fields, "no VCS revision recorded")
	case settings["vcs.modified"] == "true":
		fields = append(fields, "revision "+rev, "modified")
	default:
		fields = append(fields, "revision "+rev)
	}
	if info.GoVersion != "" {
		fields = append(fields, info.GoVersion)
	}
	return strings.Join(fields, ", ")
}
