package kube

import "testing"

func TestParseAPIPathNamesNamespaceResourceAndName(t *testing.T) {
	for _, tc := range []struct {
		path string
		want APIPath
		ok   bool
	}{
		{"/api/v1/namespaces/ns/configmaps/x", APIPath{"ns", "configmaps", "x"}, true},
		{"/api/v1/namespaces/ns/configmaps", APIPath{"ns", "configmaps", ""}, true},
		{"/apis/apps/v1/namespaces/ns/deployments/web/scale", APIPath{"ns", "deployments", "web"}, true},
		{"/apis/apps/v1/deployments", APIPath{"", "deployments", ""}, true},
		{"/api/v1/namespaces/ns", APIPath{"", "namespaces", "ns"}, true},
		{"/api/v1/namespaces", APIPath{"", "namespaces", ""}, true},
		{"/api/v1", APIPath{}, true},
		{"/apis/apps", APIPath{}, false},
		{"/version", APIPath{}, false},
		{"/healthz", APIPath{}, false},
	} {
		got, ok := ParseAPIPath(tc.path)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseAPIPath(%q) = %+v, %v; want %+v, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}
