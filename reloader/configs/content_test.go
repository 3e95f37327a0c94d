package configs

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/policy"
)

// TestContent: a ConfigMap's values are plain, a Secret's keyed with the plain legacy value
// beside, for the whole content, a subset of keys and one data key.
func TestContent(t *testing.T) {
	key, err := confighash.NewKey([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	c := &Records{hashKey: fixedKey{key}}
	cm := &corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "2"}}
	s := &corev1.Secret{Data: map[string][]byte{"a": []byte("1"), "b": []byte("2")}}
	cmObj, _ := c.Transform(cm)
	sObj, _ := c.Transform(s)
	cmRec, sRec := cmObj.(*Record), sObj.(*Record)
	plainSums := confighash.SecretKeys(s)
	tests := []struct {
		name string
		got  policy.Content
		want policy.Content
	}{
		{"configmap whole", c.Content(cmRec, nil), policy.Content{Value: confighash.ConfigMap(cm), Collaborne: confighash.CollaborneConfigMap(cm)}},
		{"configmap subset", c.Content(cmRec, []string{"a"}), policy.Content{Value: confighash.Subset(confighash.ConfigMapKeys(cm), []string{"a"}), Whole: confighash.ConfigMap(cm)}},
		{"configmap data key", c.KeyContent(cmRec, "a"), policy.Content{Value: confighash.KeyValue(confighash.ConfigMapKeys(cm), "a")}},
		{"secret whole", c.Content(sRec, nil), policy.Content{Value: key.Secret(s), Legacy: confighash.Secret(s), Collaborne: confighash.CollaborneSecret(s)}},
		{"secret subset", c.Content(sRec, []string{"a"}),
			policy.Content{Value: key.Subset(key.SecretKeys(s), []string{"a"}), Legacy: confighash.Subset(plainSums, []string{"a"}), Whole: key.Secret(s)}},
		{"secret data key", c.KeyContent(sRec, "a"),
			policy.Content{Value: key.KeyValue(key.SecretKeys(s), "a"), Legacy: confighash.KeyValue(plainSums, "a")}},
		{"secret absent data key", c.KeyContent(sRec, "z"),
			policy.Content{Value: key.KeyValue(key.SecretKeys(s), "z"), Legacy: confighash.KeyValue(plainSums, "z")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Fatalf("got %+v, want %+v", tt.got, tt.want)
			}
			if _, keyed := confighash.KeyIDOf(tt.got.Value); keyed != strings.HasPrefix(tt.name, "secret") {
				t.Fatalf("value %q: keyed = %v", tt.got.Value, keyed)
			}
		})
	}
}
