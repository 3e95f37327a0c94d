package release_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// pinnedAction is an action named by a full commit SHA: a tag can be moved, a commit cannot.
var pinnedAction = regexp.MustCompile(`^[\w.-]+/[\w./-]+@[0-9a-f]{40}$`)

type workflow struct {
	Permissions any `json:"permissions"`
	Jobs        map[string]struct {
		Permissions map[string]string `json:"permissions"`
		Steps       []struct {
			Uses string `json:"uses"`
			Run  string `json:"run"`
		} `json:"steps"`
	} `json:"jobs"`
}

// TestWorkflowsPinActionsAndTestWithoutWriteAccess: every action is pinned by commit SHA, each
// workflow grants nothing at the top and each job its own permissions, and no job that runs
// the tests (which run code from the pull request) holds a write or id-token grant.
func TestWorkflowsPinActionsAndTestWithoutWriteAccess(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot(t), ".github", "workflows", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no workflows: %v", err)
	}
	testJobs := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var w workflow
		if err := yaml.Unmarshal(data, &w); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		name := filepath.Base(f)
		if p, ok := w.Permissions.(map[string]any); !ok || len(p) != 0 {
			t.Errorf("%s: top-level permissions %v, want {}", name, w.Permissions)
		}
		for job, j := range w.Jobs {
			if j.Permissions == nil {
				t.Errorf("%s: job %s grants no permissions of its own", name, job)
			}
			runsTests := false
			for _, s := range j.Steps {
				if s.Uses != "" && !pinnedAction.MatchString(strings.Fields(s.Uses)[0]) {
					t.Errorf("%s: job %s uses %q, not pinned by a commit SHA", name, job, s.Uses)
				}
				runsTests = runsTests || strings.Contains(s.Run, ".ci/run") || strings.Contains(s.Run, "make test")
			}
			if !runsTests {
				continue
			}
			testJobs++
			for scope, grant := range j.Permissions {
				if grant == "write" || scope == "id-token" {
					t.Errorf("%s: job %s runs the tests and holds %s: %s", name, job, scope, grant)
				}
			}
		}
	}
	if testJobs < 2 {
		t.Errorf("%d jobs run the tests, want the CI's and the release's", testJobs)
	}
}

// TestChartKubeVersionIsTheTestedRange: the chart's kubeVersion admits exactly the minor
// versions the tests run on, those pinned under tools/kube*.
func TestChartKubeVersionIsTheTestedRange(t *testing.T) {
	root := repoRoot(t)
	mods, err := filepath.Glob(filepath.Join(root, "tools", "kube*", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var minors []int
	for _, m := range mods {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		v := regexp.MustCompile(`k8s\.io/kubernetes v1\.(\d+)\.`).FindSubmatch(data)
		if v == nil {
			t.Fatalf("%s pins no k8s.io/kubernetes", m)
		}
		var minor int
		fmt.Sscan(string(v[1]), &minor)
		minors = append(minors, minor)
	}
	slices.Sort(minors)
	chart, err := os.ReadFile(filepath.Join(root, "deploy", "helm", "reloader", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`kubeVersion: ">=1.%d.0-0 <1.%d.0-0"`, minors[0], minors[len(minors)-1]+1)
	if !strings.Contains(string(chart), "\n"+want+"\n") {
		t.Errorf("Chart.yaml lacks %s (tools/ pins Kubernetes 1.%v)", want, minors)
	}
}
