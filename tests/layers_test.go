package tests

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestReadmeLayers checks the README's table of which library package
// imports which against the code.
func TestReadmeLayers(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list imports with")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The table of the section "## Layers", up to the next section: other
	// tables have packages in their first column too.
	_, layers, _ := strings.Cut(string(readme), "\n## Layers\n")
	layers, _, _ = strings.Cut(layers, "\n## ")
	rows := 0
	for line := range strings.SplitSeq(layers, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		pkg := strings.Trim(strings.TrimSpace(cells[1]), "`")
		want := strings.Fields(cells[2])
		out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, "../"+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		var got []string
		for _, imp := range strings.Fields(string(out)) {
			if p, ok := strings.CutPrefix(imp, "github.com/bpfkit/bpfkit/"); ok {
				got = append(got, p)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("README says %s imports %v; it imports %v", pkg, want, got)
		}
		rows++
	}
	if rows < 7 {
		t.Fatalf("found %d rows of the layer table", rows)
	}
}
