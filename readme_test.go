package coordelect_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readmeExample returns the first Go code block of README.md's "Embed it"
// section.
func readmeExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Embed it\n")
	if !ok {
		t.Fatal(`README.md has no "## Embed it" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	_, code, ok := strings.Cut(sec, "```go\n")
	if code, _, ok = strings.Cut(code, "```\n"); !ok {
		t.Fatal(`README.md's "Embed it" has no Go code block`)
	}
	return code
}

// TestREADMEExample builds README.md's embedding example as it is written
// there, as a main package inside this module (through a build overlay,
// so that nothing is written into the module), and checks that it is a
// complete program of at most 40 lines.
func TestREADMEExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	code := readmeExample(t)
	if n := strings.Count(code, "\n"); n > 40 {
		t.Errorf("the example has %d lines, want at most 40", n)
	}
	if !strings.HasPrefix(code, "package main\n") || !strings.Contains(code, "coordelect.Start(") {
		t.Errorf("the example is not a main package calling coordelect.Start:\n%s", code)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(code), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	virtual := filepath.Join(root, "internal", "readmeexample", "main.go")
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{virtual: src}})
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goTool, "build", "-overlay", ov, "-o", filepath.Join(dir, "replica"), "./internal/readmeexample")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go build: %v\n%s", err, out)
	}
}
