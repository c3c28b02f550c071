package sim

import (
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestScenarios runs every scenario file in election/sim/testdata/scenarios. Regenerate
// the expected output with -rewrite and review the diff.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		var sc Script
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out, err := sc.Exec(td.Cmd, td.CmdArgs)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
		if sc.Sim() != nil {
			if v := sc.Sim().Checker().Violations; len(v) > 0 {
				t.Errorf("%s: safety violations: %v", path, v)
			}
		}
	})
}
