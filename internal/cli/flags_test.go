package cli

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

var updateFlagsDoc = flag.Bool("update", false, "rewrite docs/flags.md's generated block from --help")

const (
	flagsDocPath  = "../../docs/flags.md"
	flagsDocBegin = "<!-- BEGIN GENERATED: reloader --help (make docs) -->\n"
	flagsDocEnd   = "<!-- END GENERATED -->\n"
)

// helpText renders --help as the binary prints it, at a fixed width so the page does not
// depend on the terminal that regenerated it.
func helpText(t *testing.T) string {
	t.Helper()
	t.Setenv("COLUMNS", "100")
	var cli Flags
	var out bytes.Buffer
	exited := false
	opts := append(ParserOptions("dev"), kong.Writers(&out, &out), kong.Exit(func(int) { exited = true }))
	p, err := kong.New(&cli, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Parse([]string{"--help"}); err != nil {
		t.Fatalf("parsing --help: %v", err)
	}
	if !exited {
		t.Fatal("--help did not exit")
	}
	return out.String()
}

// TestFlagsDocIsTheHelpOutput holds docs/flags.md's generated block to what --help prints, so
// the flags page cannot drift from the flags.
func TestFlagsDocIsTheHelpOutput(t *testing.T) {
	doc, err := os.ReadFile(flagsDocPath)
	if err != nil {
		t.Fatal(err)
	}
	page := string(doc)
	i := strings.Index(page, flagsDocBegin)
	j := strings.Index(page, flagsDocEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated block between %q and %q", flagsDocPath, flagsDocBegin, flagsDocEnd)
	}
	want := flagsDocBegin + "```text\n" + helpText(t) + "```\n"
	got := page[i:j]
	if got == want {
		return
	}
	if *updateFlagsDoc {
		if err := os.WriteFile(flagsDocPath, []byte(page[:i]+want+page[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's generated block differs from --help; regenerate it with `make docs` (go test -run TestFlagsDocIsTheHelpOutput ./internal/cli -args -update)", flagsDocPath)
}
