package reloader_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/reloader/reloader/reloader"
)

func labelNamespace(t *testing.T, ns string, l map[string]string) {
	t.Helper()
	n, err := cluster.Client().CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels = l
	if _, err := cluster.Client().CoreV1().Namespaces().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestAllNamespaces runs the tests whose reloader watches all namespaces beside each other but
// not beside the package's other tests: their informers see every other test's events. Each
// selects its own namespaces by a label of its own, and keeps its state in a namespace of its
// own, so they do not disturb each other. The longest come first: the package's other tests wait
// for the last of them to end.
func TestAllNamespaces(t *testing.T) {
	for _, test := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"AChangeSeenJustBeforeItsNamespaceLeavesTheSelectionReloadsWhenItEnters", aChangeSeenJustBeforeItsNamespaceLeavesTheSelectionReloadsWhenItEnters},
		{"APauseOfOursEndsOnTimeAfterItsNamespaceLeavesTheSelection", aPauseOfOursEndsOnTimeAfterItsNamespaceLeavesTheSelection},
		{"AClosedWindowHoldsTheResumeOfAPauseOfOursAfterItsNamespaceLeavesTheSelection", aClosedWindowHoldsTheResumeOfAPauseOfOursAfterItsNamespaceLeavesTheSelection},
		{"AResumeOfAPauseOfOursOutsideTheSelectionWaitsForTheContentToValidate", aResumeOfAPauseOfOursOutsideTheSelectionWaitsForTheContentToValidate},
		{"AJobRecreationIsFinishedAfterItsNamespaceLeavesTheSelection", aJobRecreationIsFinishedAfterItsNamespaceLeavesTheSelection},
		{"AJobRecreationFinishedOutOfTheSelectionIsNotRunAgainWhenItsNamespaceComesBack", aJobRecreationFinishedOutOfTheSelectionIsNotRunAgainWhenItsNamespaceComesBack},
		{"AConfigDeletedWhileItsNamespaceWasOutOfTheSelectionReloadsOnItsRecreationWhatWasCreatedMeanwhile", aConfigDeletedWhileItsNamespaceWasOutOfTheSelectionReloadsOnItsRecreationWhatWasCreatedMeanwhile},
		{"AConfigDeletedWhileItsNamespaceWasOutOfTheSelectionRestartsNothingOnARecreationWithTheRecordedContent", aConfigDeletedWhileItsNamespaceWasOutOfTheSelectionRestartsNothingOnARecreationWithTheRecordedContent},
		{"ForgedStateEntriesForAnUnselectedNamespaceActOnNothing", forgedStateEntriesForAnUnselectedNamespaceActOnNothing},
		{"AConfigBackWhileItsNamespaceWasOutReloadsPodsThatWaitedForIt", aConfigBackWhileItsNamespaceWasOutReloadsPodsThatWaitedForIt},
		{"AConfigBackWhileItsNamespaceWasOutIsNotedAsRunByPodsTheReloaderSawWaitForIt", aConfigBackWhileItsNamespaceWasOutIsNotedAsRunByPodsTheReloaderSawWaitForIt},
		{"AllNamespacesWithSelectorIgnoresOtherNamespaces", allNamespacesWithSelectorIgnoresOtherNamespaces},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			test.run(t)
		})
	}
}

func allNamespacesWithSelectorIgnoresOtherNamespaces(t *testing.T) {
	stateNS, selected, other := cluster.NewNamespace(t), cluster.NewNamespace(t), cluster.NewNamespace(t)
	labelNamespace(t, selected, map[string]string{"reloader-test": selected})
	for _, ns := range []string{selected, other} {
		createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
		createDeployment(t, ns, "web", 0, named("configmap", "app-config"), nil)
	}
	startController(t, stateNS, controllerOpts{tweak: func(o *reloader.Options) {
		o.Namespace = ""
		o.NamespaceSelector = labels.SelectorFromSet(labels.Set{"reloader-test": selected})
	}})
	beforeOther := getDeployment(t, other, "web").Generation
	key := "v1.ConfigMap_" + selected + "_app-config" // all-namespaces keys carry the namespace
	waitFor(t, 10*time.Second, "the selected namespace's config recorded", func() (bool, error) {
		return stateEntry(t, stateNS, key) != "", nil
	})

	updateConfigMap(t, other, "app-config", map[string]string{"v": "1"})
	hash := updateConfigMap(t, selected, "app-config", map[string]string{"v": "1"})
	waitEnv(t, selected, "web", cmVar, hash)
	settle(t)
	if g := getDeployment(t, other, "web").Generation; g != beforeOther {
		t.Fatalf("a workload in a namespace outside the selector was reloaded (generation %d→%d)", beforeOther, g)
	}
	if v := stateEntry(t, stateNS, "v1.ConfigMap_"+other+"_app-config"); v != "" {
		t.Fatalf("a config outside the selector is tracked in state: %s", v)
	}
}

// seedChange is one config change in a seed manifest and the Deployments it must reload, once.
type seedChange struct {
	kind, name string
	reloads    []string
}

// The stakater examples of the source documents, applied from testdata with their annotations
// verbatim.
func TestSeedExamplesReloadAsDescribed(t *testing.T) {
	t.Parallel()
	runSeed(t, "../testdata/seeds/stakater-examples.yaml", []seedChange{
		{"ConfigMap", "foo-configmap", []string{"auto-app", "configmap-app"}},
		{"Secret", "foo-secret", []string{"auto-app", "secret-app"}},
		{"ConfigMap", "baz-configmap", []string{"configmap-app"}},
		{"ConfigMap", "matched-config", []string{"search-app"}},
		{"ConfigMap", "unmatched-config", nil},
	})
}

// The homelab examples (seed 004): auto "true" wins, so every referenced config reloads every
// example, whatever match and kind say on the workload, as in stakater.
func TestHomelabSeedExamplesBehaveAsStakater(t *testing.T) {
	t.Parallel()
	all := []string{"example-app", "selective-app", "configmap-app", "secret-app"}
	runSeed(t, "../testdata/seeds/homelab-examples.yaml", []seedChange{
		{"ConfigMap", "app-config", all},
		{"Secret", "app-secret", all},
	})
}

func runSeed(t *testing.T, manifest string, tests []seedChange) {
	ns := cluster.NewNamespace(t)
	if _, err := cluster.ApplyFile(context.Background(), ns, manifest); err != nil {
		t.Fatal(err)
	}
	r := startController(t, ns, controllerOpts{})
	for _, tt := range tests {
		t.Run(tt.kind+" "+tt.name, func(t *testing.T) {
			before, done := generations(t, ns), configSyncs(t, r)
			changeConfig(t, ns, tt.kind, tt.name)
			judgedAfter(t, r, done, "the change")
			moved := changed(before, generations(t, ns))
			want := map[string]int64{}
			for _, w := range tt.reloads {
				want[w] = 1
			}
			if len(moved) != len(want) {
				t.Fatalf("reloaded %v, want %v", moved, want)
			}
			for w, n := range want {
				if moved[w] != n {
					t.Fatalf("reloaded %v, want %v", moved, want)
				}
			}
		})
	}
}

// filterCase: one config changes under a filter flag; does its dependent reload? A row where
// nothing may happen also changes a control config that the filter keeps, after its own, and
// waits for the control's dependent to reload first.
func TestFiltersKeepConfigsOut(t *testing.T) {
	t.Parallel()
	labelled := config{kind: "ConfigMap", name: "ctl", labels: map[string]string{"reload": "yes"}}
	tests := []struct {
		name    string
		tweak   func(o *reloader.Options, ns string)
		config  config
		reload  bool
		control *config
	}{
		{"--resources-to-ignore=secrets skips secrets", func(o *reloader.Options, _ string) { o.IgnoreSecrets = true }, secretS, false, &config{kind: "ConfigMap", name: "ctl"}},
		{"--resources-to-ignore=secrets keeps configmaps", func(o *reloader.Options, _ string) { o.IgnoreSecrets = true }, cmA, true, nil},
		{"--resources-to-ignore=configmaps skips configmaps", func(o *reloader.Options, _ string) { o.IgnoreConfigMaps = true }, cmA, false, &config{kind: "Secret", name: "ctl"}},
		{"--resource-label-selector skips unlabelled configs", func(o *reloader.Options, _ string) { o.ResourceLabelSelector = "reload=yes" }, cmA, false, &labelled},
		{"--resource-label-selector keeps labelled configs", func(o *reloader.Options, _ string) { o.ResourceLabelSelector = "reload=yes" },
			config{kind: "ConfigMap", name: "a", labels: map[string]string{"reload": "yes"}}, true, nil},
		// The only namespace watched is ignored: no control can fire; the state shows nothing tracked.
		{"--namespaces-to-ignore", func(o *reloader.Options, ns string) { o.NamespacesToIgnore = []string{ns} }, cmA, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := cluster.NewNamespace(t)
			createConfig(t, ns, tt.config)
			createDeployment(t, ns, "web", 0, named(strings.ToLower(tt.config.kind), tt.config.name), nil)
			if tt.control != nil {
				createConfig(t, ns, *tt.control)
				createDeployment(t, ns, "control", 0, named(strings.ToLower(tt.control.kind), tt.control.name), nil)
			}
			r := startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { tt.tweak(o, ns) }})
			r.settle() // the first start records what it tracks
			before := generations(t, ns)
			changeConfig(t, ns, tt.config.kind, tt.config.name)
			if tt.reload {
				waitFor(t, 10*time.Second, "the reload", func() (bool, error) { return getDeployment(t, ns, "web").Generation > before["web"], nil })
				return
			}
			if tt.control != nil {
				changeConfig(t, ns, tt.control.kind, tt.control.name)
				waitFor(t, 10*time.Second, "the control to reload", func() (bool, error) {
					return getDeployment(t, ns, "control").Generation > before["control"], nil
				})
			}
			r.settle()
			if g := getDeployment(t, ns, "web").Generation; g != before["web"] {
				t.Fatalf("a filtered-out config reloaded its dependent (generation %d→%d)", before["web"], g)
			}
			if v := stateEntry(t, ns, "v1."+tt.config.kind+"_"+tt.config.name); v != "" {
				t.Fatalf("a filtered-out config is tracked in state: %s", v)
			}
		})
	}
}
