package kube

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
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

// A shard's creation sends the ConfigMap and keeps only the resourceVersion of the answer (the
// whole shard and its managed fields); a refusal is still an API status error the store can
// tell, such as AlreadyExists when another replica created it first.
func TestAStateShardsCreationKeepsOnlyTheVersionOfTheAnswer(t *testing.T) {
	exists := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var sent corev1.ConfigMap
		if r.Method != http.MethodPost || r.URL.Path != "/api/v1/namespaces/ns/configmaps" || json.NewDecoder(r.Body).Decode(&sent) != nil || sent.Data["k"] != "v" {
			t.Errorf("sent %s %s with data %v", r.Method, r.URL.Path, sent.Data)
		}
		w.Header().Set("Content-Type", "application/json")
		if exists {
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"AlreadyExists","code":409,"details":{"name":"s","kind":"configmaps"}}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"s","resourceVersion":"42","managedFields":[{"manager":"reloader","fieldsV1":{"f:data":{"f:k":{}}}}]},"data":{"k":"v"}}`)
	}))
	defer srv.Close()
	clients, err := New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	c := clients.StateConfigMaps("ns")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string]string{"k": "v"}}
	out, err := c.Create(context.Background(), cm, metav1.CreateOptions{})
	if err != nil || out.ResourceVersion != "42" || out.Data != nil || out.ManagedFields != nil {
		t.Fatalf("created: %+v, %v; want only resourceVersion 42", out, err)
	}
	exists = true
	if _, err := c.Create(context.Background(), cm, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("a second creation: %v, want AlreadyExists", err)
	}
}
