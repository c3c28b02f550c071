package sim

import (
	"os"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// docMarker precedes each example of docs/scenarios.md that
// TestScenariosDoc runs.
const docMarker = "<!-- TestScenariosDoc runs the block below and compares its output. -->"

// TestScenariosDoc runs the marked examples of docs/scenarios.md as
// scenario files and requires the output the page shows: an example that
// no longer runs, or whose output changed, fails here (update the page
// from what the test prints).
func TestScenariosDoc(t *testing.T) {
	page, err := os.ReadFile("../../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(page), docMarker)[1:]
	if len(blocks) == 0 {
		t.Fatalf("docs/scenarios.md has no example marked %q", docMarker)
	}
	for _, b := range blocks {
		_, body, ok := strings.Cut(b, "```\n")
		body, _, closed := strings.Cut(body, "```\n")
		if !ok || !closed {
			t.Fatalf("a marked example is not a fenced block:\n%s", b[:min(len(b), 200)])
		}
		var sc Script
		datadriven.RunTestFromString(t, body, func(t *testing.T, td *datadriven.TestData) string {
			out, err := sc.Exec(td.Cmd, td.CmdArgs)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
		if sc.Sim() != nil {
			if v := sc.Sim().Checker().Violations; len(v) > 0 {
				t.Errorf("safety violations: %v", v)
			}
		}
	}
}
