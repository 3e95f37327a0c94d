package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

const module = "github.com/reloader/reloader"

// wall is what one sub-package of reloader/ may reach: the other packages under reloader/ it
// imports (by their path under reloader/), and the identifiers of the state package its code
// uses (none: it does not import state). Tests may build a whole state.Store, so the state rule
// holds for code files only; the import rule holds for tests too.
type wall struct {
	imports []string
	state   []string
}

// walls is the rule for every sub-package of reloader/ (issue 51): a part sees the shared
// vocabulary below it and its own kind of state entries, never the root package that wires the
// parts together. A sub-package missing here fails the test, so a new one is ruled on when it is
// added.
var walls = map[string]wall{
	"reloader/configs": {
		imports: []string{"reloader/internal/entrykeys", "reloader/workload"},
		state:   []string{"Configs", "Entry", "KeyOf", "ParseKey"},
	},
	"reloader/internal/arrivals": {},
	"reloader/internal/entrykeys": {
		imports: []string{"reloader/workload"},
		state:   []string{"EntryKind", "Key", "KindOf"},
	},
	"reloader/internal/report": {},
	"reloader/jobs":            {imports: []string{"reloader/internal/report", "reloader/workload"}},
	"reloader/runs": {
		imports: []string{"reloader/configs", "reloader/internal/entrykeys", "reloader/workload"},
		state:   []string{"KindView"},
	},
	"reloader/safe": {
		imports: []string{"reloader/configs", "reloader/internal/entrykeys", "reloader/internal/report", "reloader/workload"},
		state:   []string{"EntryKind", "KindView"},
	},
	"reloader/workload": {},
}

// wallBreaches lists how the packages under dir of fsys break the walls; dir is the root
// package, its sub-packages are ruled by walls.
func wallBreaches(fsys fs.FS, dir string, walls map[string]wall) ([]string, error) {
	var breaches []string
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || path.Dir(p) == dir {
			return err
		}
		if strings.Contains(p, "/testdata/") {
			return nil
		}
		pkg := path.Dir(p)
		w, ok := walls[pkg]
		if !ok {
			breaches = append(breaches, pkg+": a sub-package the walls do not rule on")
			return fs.SkipDir
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		test := strings.HasSuffix(p, "_test.go")
		for _, bad := range fileBreaches(f, dir, w, test) {
			breaches = append(breaches, p+": "+bad)
		}
		return nil
	})
	return breaches, err
}

// fileBreaches lists how file f of a sub-package of root breaks wall w.
func fileBreaches(f *ast.File, root string, w wall, test bool) []string {
	var breaches []string
	stateName := ""
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		rel, ok := strings.CutPrefix(p, module+"/")
		switch {
		case !ok:
		case rel == root:
			breaches = append(breaches, "imports the root package "+p)
		case strings.HasPrefix(rel, root+"/") && !slices.Contains(w.imports, rel):
			breaches = append(breaches, "imports "+p+", which its wall does not allow")
		case rel == "state" && !test:
			stateName = "state"
			if imp.Name != nil {
				stateName = imp.Name.Name
			}
		}
	}
	if stateName == "" {
		return breaches
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == stateName && !slices.Contains(w.state, sel.Sel.Name) {
			breaches = append(breaches, "uses state."+sel.Sel.Name+", which its wall does not allow")
		}
		return true
	})
	return breaches
}

// No sub-package of reloader/ imports the root package, a sibling its wall does not name, or a
// part of the state beyond its own entry kind.
func TestTheSubPackagesOfReloaderKeepTheirWalls(t *testing.T) {
	breaches, err := wallBreaches(os.DirFS("."), "reloader", walls)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range breaches {
		t.Error(b)
	}
}

// The wall check itself: it finds each kind of breach, and passes a package that keeps its wall.
func TestTheWallCheckFindsAnImportOfTheRootASiblingAndStateBeyondTheKind(t *testing.T) {
	file := func(src string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(src)} }
	fsys := fstest.MapFS{
		"reloader/controller.go": file(`package reloader
import "github.com/reloader/reloader/state"
var _ state.Store`),
		"reloader/low/low.go": file(`package low
import st "github.com/reloader/reloader/state"
var _ st.KindView`),
		"reloader/low/low_test.go": file(`package low
import "github.com/reloader/reloader/state"
var _ = state.New`),
		"reloader/part/part.go": file(`package part
import (
	"github.com/reloader/reloader/reloader"
	"github.com/reloader/reloader/reloader/low"
	"github.com/reloader/reloader/reloader/other"
	st "github.com/reloader/reloader/state"
	"github.com/reloader/reloader/policy"
)
var _ = st.New
var _ st.KindView`),
		"reloader/other/other.go": file(`package other`),
		"reloader/stray/stray.go": file(`package stray`),
	}
	rules := map[string]wall{
		"reloader/low":   {state: []string{"KindView"}},
		"reloader/part":  {imports: []string{"reloader/low"}, state: []string{"KindView"}},
		"reloader/other": {},
	}
	got, err := wallBreaches(fsys, "reloader", rules)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"reloader/part/part.go: imports the root package github.com/reloader/reloader/reloader",
		"reloader/part/part.go: imports github.com/reloader/reloader/reloader/other, which its wall does not allow",
		"reloader/part/part.go: uses state.New, which its wall does not allow",
		"reloader/stray: a sub-package the walls do not rule on",
	}
	if !slices.Equal(got, want) {
		t.Errorf("breaches:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
