package deploy_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestChartPassesIgnoreSecretTypesOnlyWhenChanged: the chart leaves the reloader's default
// (Helm release Secrets and service-account tokens) alone, and passes any other value, the empty
// one included.
func TestChartPassesIgnoreSecretTypesOnlyWhenChanged(t *testing.T) {
	for _, tc := range []struct {
		set       string
		want      string
		wantGiven bool
	}{
		{"", "", false},
		{"ignoreSecretTypes=", "", true},
		{`ignoreSecretTypes=helm.sh/release.v1\,kubernetes.io/service-account-token`, "", false},
		{"ignoreSecretTypes=helm.sh/release.v1", "helm.sh/release.v1", true},
	} {
		var set []string
		if tc.set != "" {
			set = append(set, tc.set)
		}
		out, err := renderWith(t, "default", "", set...)
		if err != nil {
			t.Fatalf("--set %s: %v\n%s", tc.set, err, out)
		}
		d := one[*appsv1.Deployment](t, decodeManifests(t, "helm template --set "+tc.set, out))
		got, given := args(t, d)["ignore-secret-types"]
		if given != tc.wantGiven || got != tc.want {
			t.Errorf("--set %s: --ignore-secret-types given %v as %q, want %v as %q", tc.set, given, got, tc.wantGiven, tc.want)
		}
	}
}
