package policy

import (
	"os"
	"regexp"
	"testing"
)

// The reasons table of docs/design.md ("The rule in code") lists every reason, in the words
// String says, and no other.
func TestTheDesignsReasonTableSaysEveryReasonInItsWords(t *testing.T) {
	doc, err := os.ReadFile("../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `[A-Za-z]+` \\| (.+) \\|$").FindAllStringSubmatch(string(doc), -1) {
		rows[m[1]] = true
	}
	n := 0
	for r := Reason(1); r.String() != "unknown"; r++ {
		n++
		if !rows[r.String()] {
			t.Errorf("reason %d (%q) has no row in docs/design.md", r, r.String())
		}
	}
	if len(rows) != n {
		t.Errorf("docs/design.md lists %d reasons, policy has %d", len(rows), n)
	}
}
