package testutil

import (
	"strings"
	"testing"
)

// WantErr fails t unless err is non-nil, starts with the prefix of package
// pkg ("mapfd: ": every error a bpfkit package returns does) and holds
// every part. The adversarial tests check each hostile call's answer with
// it: what says which call it was.
func WantErr(t testing.TB, pkg, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want one saying %q", what, parts)
	}
	if !strings.HasPrefix(err.Error(), pkg+": ") {
		t.Fatalf("%s: error %q does not start with %s's prefix", what, err, pkg)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: error %q does not say %q", what, err, p)
		}
	}
}
