package checker

import (
	"strings"
)

// patternOf is a reload annotation's regular expression that matches names and no other name:
// one name's last character as a class ("cm-[0]"), or an alternation of several
// ("(cm-0|cm--2)"). Neither is a valid config name, so the reloader reads both as patterns.
func patternOf(names []string) string {
	if len(names) == 1 {
		n := names[0]
		return n[:len(n)-1] + "[" + n[len(n)-1:] + "]"
	}
	return "(" + strings.Join(names, "|") + ")"
}
