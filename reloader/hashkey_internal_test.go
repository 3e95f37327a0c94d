package reloader

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/reloader/reloader/confighash"
)

// fakeSecrets answers Get from stored (NotFound when nil) and Create with createErr, or by
// storing the Secret. onCreate, if set, runs first: another replica acting meanwhile.
type fakeSecrets struct {
	stored           *corev1.Secret
	getErr           error
	createErr        error
	onCreate         func(f *fakeSecrets)
	gets, creates    int
	createdImmutable bool
}

var secretsResource = schema.GroupResource{Resource: "secrets"}

func (f *fakeSecrets) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.Secret, error) {
	f.gets++
	if f.getErr != nil {
		return nil, f.getErr
	}
	if f.stored == nil {
		return nil, apierrors.NewNotFound(secretsResource, name)
	}
	return f.stored.DeepCopy(), nil
}

func (f *fakeSecrets) Create(_ context.Context, s *corev1.Secret, _ metav1.CreateOptions) (*corev1.Secret, error) {
	f.creates++
	if f.onCreate != nil {
		f.onCreate(f)
	}
	if f.createErr != nil {
		return nil, f.createErr
	}
	if f.stored != nil {
		return nil, apierrors.NewAlreadyExists(secretsResource, s.Name)
	}
	f.createdImmutable = s.Immutable != nil && *s.Immutable
	f.stored = s.DeepCopy()
	return s, nil
}

func keySecret(b byte, n int) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: DefaultHashKeySecret, Namespace: "ns"},
		Data: map[string][]byte{HashKeyField: []byte(strings.Repeat(string(b), n))}}
}

func TestReadOrCreateHashKey(t *testing.T) {
	forbidden := apierrors.NewForbidden(secretsResource, DefaultHashKeySecret, errors.New("rbac"))
	existing := keySecret('e', 32)
	existingID := confighash.KeyID(existing.Data[HashKeyField])
	tests := []struct {
		name    string
		f       *fakeSecrets
		created bool
		id      string // "" when a new random key is expected
		err     string // a substring of the error, "" for none
	}{
		{"an existing key is used", &fakeSecrets{stored: existing}, false, existingID, ""},
		{"a missing key is made", &fakeSecrets{}, true, "", ""},
		{"another replica made it between our read and our create: its key is used",
			&fakeSecrets{onCreate: func(f *fakeSecrets) { f.stored = existing }}, false, existingID, ""},
		{"get refused names the permission", &fakeSecrets{getErr: forbidden}, false, "", `lacks permission "get" on secrets in namespace "ns"`},
		{"create refused names the permission", &fakeSecrets{createErr: forbidden}, false, "", `lacks permission "create" on secrets in namespace "ns"`},
		{"a short key is refused, saying how to get a new one", &fakeSecrets{stored: keySecret('s', 16)}, false, "", "delete the Secret to have a new key made"},
		{"a Secret without the key's field is refused", &fakeSecrets{stored: &corev1.Secret{}}, false, "", `data "key"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, created, _, err := readOrCreateHashKey(context.Background(), tt.f, "ns", DefaultHashKeySecret)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if created != tt.created {
				t.Fatalf("created = %v, want %v", created, tt.created)
			}
			if tt.id != "" && key.ID() != tt.id {
				t.Fatalf("key id %s, want %s", key.ID(), tt.id)
			}
			if created {
				made := tt.f.stored.Data[HashKeyField]
				if len(made) != confighash.MinKeyLen || key.ID() != confighash.KeyID(made) || !tt.f.createdImmutable {
					t.Fatalf("made a %d-byte key (immutable %v) with id %s; want %d bytes, immutable, its own id",
						len(made), tt.f.createdImmutable, key.ID(), confighash.MinKeyLen)
				}
			}
		})
	}
}

func TestNewKeysAreRandom(t *testing.T) {
	a, b := newHashKeySecret("x").Data[HashKeyField], newHashKeySecret("x").Data[HashKeyField]
	if string(a) == string(b) {
		t.Fatal("two new keys are equal")
	}
}
