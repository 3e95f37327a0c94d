package kube

import (
	"strings"
	"testing"
)

func TestResourceVersionOfReadsTheMetadataOfAnAnswer(t *testing.T) {
	tests := []struct {
		name, json, want string
		wantErr          bool
	}{
		{"as the API server writes it", `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"s","resourceVersion":"42"},"data":{"k":"v"}}`, "42", false},
		{"data first", `{"data":{"k":{"x":[1,2]}},"metadata":{"resourceVersion":"7"}}`, "7", false},
		{"no resourceVersion", `{"metadata":{"name":"s"}}`, "", false},
		{"no metadata", `{"kind":"ConfigMap"}`, "", false},
		{"not an object", `["metadata"]`, "", true},
		{"cut short", `{"kind":"ConfigMap","metadata":{"resourceVer`, "", true},
		{"empty", ``, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resourceVersionOf(strings.NewReader(tt.json))
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("resourceVersionOf(%s) = %q, %v; want %q, error %t", tt.json, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
