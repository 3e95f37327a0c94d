package cli

import (
	"strings"
	"testing"
)

func TestNamespaceScopePrecedence(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "KUBERNETES_NAMESPACE" {
				return v
			}
			return ""
		}
	}
	for _, tt := range []struct {
		cli      Flags
		env      string
		want     string
		stakater bool // scoped the stakater way: the all-namespaces flags are dropped
	}{
		{Flags{}, "", "", false},
		{Flags{}, "apps", "apps", true},
		{Flags{Namespace: "mine"}, "apps", "mine", false},
		{Flags{Namespaces: []string{"a", "b"}}, "apps", "a,b", true},
	} {
		got, stakater := tt.cli.scope(env(tt.env))
		if strings.Join(got, ",") != tt.want || stakater != tt.stakater {
			t.Errorf("%+v with $KUBERNETES_NAMESPACE=%q: %v (stakater-scoped %v), want %q (%v)", tt.cli.Namespaces, tt.env, got, stakater, tt.want, tt.stakater)
		}
	}
}
