package policy

import (
	"slices"
	"testing"
)

func TestAMisspeltReloaderKeyIsUnknownAndNamesTheNearestKeyRead(t *testing.T) {
	custom := DefaultAnnotations()
	custom.Auto = "example.com/auto"
	for _, tc := range []struct {
		name        string
		annotations Annotations
		keys        map[string]string
		want        []UnknownKey
	}{
		{"plural reload", DefaultAnnotations(), map[string]string{"configmap.reloader.stakater.com/reloads": "a"},
			[]UnknownKey{{Key: "configmap.reloader.stakater.com/reloads", Nearest: "configmap.reloader.stakater.com/reload"}}},
		{"doubled letter", DefaultAnnotations(), map[string]string{"reloader.stakater.com/autoo": "true"},
			[]UnknownKey{{Key: "reloader.stakater.com/autoo", Nearest: "reloader.stakater.com/auto"}}},
		{"secret subdomain", DefaultAnnotations(), map[string]string{"secret.reloader.stakater.com/reloda": "s"},
			[]UnknownKey{{Key: "secret.reloader.stakater.com/reloda", Nearest: "secret.reloader.stakater.com/reload"}}},
		{"deployment subdomain", DefaultAnnotations(), map[string]string{"deployment.reloader.stakater.com/pause-periods": "5m"},
			[]UnknownKey{{Key: "deployment.reloader.stakater.com/pause-periods", Nearest: "deployment.reloader.stakater.com/pause-period"}}},
		{"reloader prefix", DefaultAnnotations(), map[string]string{"reloader/windows": "Mon-Fri 09:00-17:00"},
			[]UnknownKey{{Key: "reloader/windows", Nearest: "reloader/window"}}},
		{"renamed by a flag: the stakater key is unknown", custom, map[string]string{"reloader.stakater.com/auto": "true"},
			[]UnknownKey{{Key: "reloader.stakater.com/auto", Nearest: "example.com/auto"}}},
		{"renamed by a flag: a misspelt stakater key names the configured one", custom, map[string]string{"reloader.stakater.com/autoo": "true"},
			[]UnknownKey{{Key: "reloader.stakater.com/autoo", Nearest: "example.com/auto"}}},
		{"renamed by a flag: the configured key is known", custom, map[string]string{"example.com/auto": "true"}, nil},
		{"stakater's CSI keys: unsupported, no near key suggested", DefaultAnnotations(), map[string]string{
			"secretproviderclass.reloader.stakater.com/reload": "spc", "secretproviderclass.reloader.stakater.com/auto": "true",
			"secretproviderclasses.exclude.reloader.stakater.com/reload": "spc"},
			[]UnknownKey{{Key: "secretproviderclass.reloader.stakater.com/auto", Unsupported: csiUnsupported},
				{Key: "secretproviderclass.reloader.stakater.com/reload", Unsupported: csiUnsupported},
				{Key: "secretproviderclasses.exclude.reloader.stakater.com/reload", Unsupported: csiUnsupported}}},
		{"every key read", DefaultAnnotations(), map[string]string{"reloader.stakater.com/auto": "true",
			"configmap.reloader.stakater.com/reload": "a", "secrets.exclude.reloader.stakater.com/reload": "b",
			"reloader/window": "x", "reloader/min-interval": "1m", "reloader/track-rollout": "true"}, nil},
		{"every key written", DefaultAnnotations(), map[string]string{"reloader/history": "", "reloader/restore": "",
			"reloader/pending-job": "", "reloader/config-hashes": "", "deployment.reloader.stakater.com/paused-at": "",
			"reloader/last-reload": "", "reloader/restarted-at": "", "reloader.stakater.com/last-reloaded-from": ""}, nil},
		{"out of scope", DefaultAnnotations(), map[string]string{"example.com/reloader": "x", "notreloader.stakater.com/auto": "x",
			"reloader.stakater.com": "x", "deployment.kubernetes.io/revision": "3"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.annotations.UnknownKeys(tc.annotations.KnownKeys("reloader/pending-job"), tc.keys)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("UnknownKeys = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAnUpperCaseNameInAReloadAnnotationIsACaseSlip(t *testing.T) {
	for _, tc := range []struct {
		item, want string
		ok         bool
	}{
		{"App-Config", "app-config", true},
		{"APP.CONFIG", "app.config", true},
		{"app-config", "", false}, // a name
		{"app-.*", "", false},     // a pattern
		{"App-.*", "", false},     // a pattern, even if it matches nothing
		{"(?i)App-Config", "", false},
	} {
		got, ok := CaseSlip(tc.item)
		if got != tc.want || ok != tc.ok {
			t.Errorf("CaseSlip(%q) = %q, %v; want %q, %v", tc.item, got, ok, tc.want, tc.ok)
		}
	}
	pol := DefaultAnnotations().Of(namedAnn("configmap", "app-config,App-Config,app-.*"), nil)
	got := pol.Patterns()
	if len(got) != 2 || got[0].Item != "App-Config" || got[1].Item != "app-.*" {
		t.Fatalf("Patterns = %+v, want App-Config and app-.*", got)
	}
	if app := (ConfigRef{KindConfigMap, "app-x"}); got[0].Matches(app) || !got[1].Matches(app) {
		t.Fatalf("App-Config matches app-x, or app-.* does not")
	}
}
