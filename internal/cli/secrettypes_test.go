package cli

import (
	"slices"
	"strings"
	"testing"
)

// TestIgnoreSecretTypesDefaultsToHelmReleasesAndAccountTokens: by default Helm's release Secrets
// and service-account tokens stay out of the caches; Helm's alone can be chosen, an empty value
// caches every type, and an empty item is refused.
func TestIgnoreSecretTypesDefaultsToHelmReleasesAndAccountTokens(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		want    []string
		wantErr string
	}{
		{args: nil, want: []string{"helm.sh/release.v1", "kubernetes.io/service-account-token"}},
		{args: []string{"--ignore-secret-types="}, want: nil},
		{args: []string{"--ignore-secret-types=helm.sh/release.v1"}, want: []string{"helm.sh/release.v1"}},
		{args: []string{"--ignore-secret-types=a,,b"}, wantErr: "--ignore-secret-types: empty type"},
		{args: []string{"--ignore-secret-types=a, b"}, wantErr: "spaces around one"},
	} {
		c, err := parseFlags(tt.args...)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: error %v, want one containing %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		if got := c.Options("ns", "ns", nil, nil).IgnoreSecretTypes; !slices.Equal(got, tt.want) {
			t.Errorf("%q: ignored Secret types %q, want %q", tt.args, got, tt.want)
		}
	}
}
