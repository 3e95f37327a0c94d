package reloader

// The key of Secret hashes.
//
// Hashes of Secret content are keyed (package confighash), so that reading the state ConfigMap
// or a Deployment does not let anyone confirm a guessed Secret value. The key lives in a Secret
// that only the reloader needs, in the state namespace. Run reads it before anything is hashed;
// when it is missing, Run makes one of 32 random bytes and creates the Secret, immutable. Two
// replicas racing to create it both end up with the one that was stored.
//
// The key is read once, at start: a key Secret deleted or replaced while the reloader runs is
// used (or a new key made) from the next start. A new key restarts nothing, because every keyed
// value names its key: markers and state entries under another key are judged as unknown
// (policy.OtherKey).

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/confighash"
)

const (
	// DefaultHashKeySecret is the name of the Secret holding the key, unless --hash-key-secret
	// says otherwise.
	DefaultHashKeySecret = "reloader-hash-key"
	// HashKeyField is the data key of that Secret that holds the key's bytes.
	HashKeyField = "key"
)

// HashKey is where the key of Secret hashes lives and, once Run has loaded it, the key.
type HashKey struct {
	// Secret names the Secret, in the state namespace, that holds the key; empty means
	// DefaultHashKeySecret. It is created when missing.
	Secret string
	key    confighash.Key
	// inherited: at load the Secret already existed, made by a reloader (its managed-by label):
	// a reloader ran here before this start.
	inherited bool
	// runOnly signs notes while no key is loaded (--resources-to-ignore=secrets): what it
	// signed is trusted only by this process (noteKey).
	runOnly confighash.Key
}

func (h HashKey) secretName() string { return cmp.Or(h.Secret, DefaultHashKeySecret) }

// HashKeyOf returns the key that a hash key Secret holds.
func HashKeyOf(s *corev1.Secret) (confighash.Key, error) {
	k, err := confighash.NewKey(s.Data[HashKeyField])
	if err != nil {
		return confighash.Key{}, fmt.Errorf("hash key Secret %s/%s, data %q: %w; delete the Secret to have a new key made",
			s.Namespace, s.Name, HashKeyField, err)
	}
	return k, nil
}

// Key is the key of Secret hashes, once loaded.
func (h *HashKey) Key() confighash.Key { return h.key }

// noteKey is the key the reloader's notes are signed with (Job recreations, CronJob runs): the
// hash key once loaded, else a key of this process alone.
func (h *HashKey) noteKey() confighash.Key {
	if k := h.key; k.ID() != "" {
		return k
	}
	return h.runOnly
}

// errKeyNotCreated: the key Secret is missing and the reloader may not create it (Collaborne's
// Role, seed 002, grants no create on secrets).
var errKeyNotCreated = errors.New("the hash key Secret is missing and may not be created")

// secretGetCreator is the Get and Create of client-go's typed Secret client.
type secretGetCreator interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error)
	Create(ctx context.Context, s *corev1.Secret, opts metav1.CreateOptions) (*corev1.Secret, error)
}

// readOrCreateHashKey returns the key in Secret name of namespace, creating the Secret with a
// new random key when it is missing; created reports that it did, inherited that it existed,
// made by a reloader.
func readOrCreateHashKey(ctx context.Context, secrets secretGetCreator, namespace, name string) (key confighash.Key, created, inherited bool, err error) {
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return confighash.Key{}, false, false, explainSecret("get", namespace, name, err)
	}
	inherited = err == nil && s.Labels["app.kubernetes.io/managed-by"] == "reloader"
	if err != nil {
		s, err = secrets.Create(ctx, newHashKeySecret(name), metav1.CreateOptions{})
		switch {
		case err == nil:
			created = true
		case apierrors.IsAlreadyExists(err):
			// Another replica created it between our read and our create: use its key.
			if s, err = secrets.Get(ctx, name, metav1.GetOptions{}); err != nil {
				return confighash.Key{}, false, false, explainSecret("get", namespace, name, err)
			}
		case apierrors.IsForbidden(err), errors.Is(err, errDryRunCreate):
			return confighash.Key{}, false, false, fmt.Errorf("%w: %w", errKeyNotCreated, explainSecret("create", namespace, name, err))
		default:
			return confighash.Key{}, false, false, explainSecret("create", namespace, name, err)
		}
	}
	key, err = HashKeyOf(s)
	return key, created, inherited, err
}

// newHashKeySecret is a new key Secret: MinKeyLen random bytes, immutable so that it is never
// edited in place by mistake (a new key is made by deleting it).
func newHashKeySecret(name string) *corev1.Secret {
	secret := make([]byte, confighash.MinKeyLen)
	_, _ = rand.Read(secret) // crypto/rand.Read never fails: it crashes the program instead
	immutable := true
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{"app.kubernetes.io/name": "reloader", "app.kubernetes.io/managed-by": "reloader"},
			Annotations: map[string]string{"reloader/description": "Key of the reloader's hashes of Secret content. " +
				"Deleting it restarts nothing; the reloader makes a new key at its next start."},
		},
		Type:      corev1.SecretTypeOpaque,
		Immutable: &immutable,
		Data:      map[string][]byte{HashKeyField: secret},
	}
}

// explainSecret wraps a failed call on the key Secret; a refusal names the permission to grant.
func explainSecret(verb, namespace, name string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%s hash key Secret %s/%s: the reloader lacks permission %q on secrets in namespace %q; grant it in the Role: %w",
			verb, namespace, name, verb, namespace, err)
	}
	return fmt.Errorf("%s hash key Secret %s/%s: %w", verb, namespace, name, err)
}

// load reads (or creates) the key, in its Secret in namespace ns, before anything is hashed,
// retrying until the API server answers, as loadState does: each distinct error is logged once,
// retries back off up to 5 s, and the reloader stays unready meanwhile. It reports false if ctx
// ended first.
func (h *HashKey) load(ctx context.Context, secrets secretGetCreator, ns string, log *slog.Logger) bool {
	name := h.secretName()
	backoff, said := 200*time.Millisecond, ""
	for {
		key, created, inherited, err := readOrCreateHashKey(ctx, secrets, ns, name)
		if err == nil {
			h.key, h.inherited = key, inherited
			msg := "hash key of Secret hashes loaded"
			if created {
				msg = "made a new hash key for Secret hashes; hashes made under an earlier key restart nothing"
			}
			log.Info(msg, "secret", ns+"/"+name, "key_id", key.ID())
			return true
		}
		if errors.Is(err, errKeyNotCreated) {
			// A key for this run only is a lost key at every start: it restarts nothing (see
			// docs/design.md, "Secret hash keys"), at the cost of Secret changes made while down.
			h.key, _ = HashKeyOf(newHashKeySecret(name))
			if errors.Is(err, errDryRunCreate) {
				log.Warn("dry run: no hash key Secret, and a dry run creates none: Secret hashes use a key held in memory for this run, "+
					"so Secret markers written under another key do not compare; Secret changes made before this start are not reported",
					"secret", ns+"/"+name, "key_id", h.key.ID())
				return true
			}
			log.Warn("the reloader may not create its hash key Secret: Secret hashes use a key held in memory for this run; "+
				"restarts restart nothing, but a Secret change made while the reloader is down is not caught up; "+
				"grant create on secrets, or create the Secret yourself (data key \"key\", at least 32 random bytes)",
				"secret", ns+"/"+name, "key_id", h.key.ID())
			return true
		}
		if m := err.Error(); m != said {
			log.Error("cannot load the hash key; retrying until it can (not ready meanwhile)", "err", err)
			said = m
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// read reads the key once, from its Secret in namespace ns, creating none (secrets is read
// only): without it no Secret hash compares.
func (h *HashKey) read(ctx context.Context, secrets secretGetCreator, ns string) error {
	name := h.secretName()
	key, _, inherited, err := readOrCreateHashKey(ctx, secrets, ns, name)
	if errors.Is(err, errDryRunCreate) {
		return fmt.Errorf("the hash key Secret %s/%s does not exist: the reloader has not run there, or under another --state-namespace", ns, name)
	}
	if err != nil {
		return fmt.Errorf("read the hash key Secret (Secret hashes compare only under its key): %w", err)
	}
	h.key, h.inherited = key, inherited
	return nil
}
