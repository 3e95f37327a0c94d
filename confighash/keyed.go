package confighash

// Keyed hashes of Secret content.
//
// A plain hash of a Secret, stored in the state ConfigMap or written into a pod template, lets
// anyone who may read those but not Secrets (the stock view role) confirm a guess: hash the
// guessed content and compare. So every hash of Secret content that leaves the reloader's memory
// is an HMAC-SHA1 under a per-installation key that only the reloader reads, over the same byte
// streams as the plain hashes (the package doc, KeySum, Subset): the design's "SHA1 per config"
// holds, keyed where Secret content is involved.
//
// A keyed value is written "hmac-<key id>-<40 hex>". The key id is the first 8 hex digits of
// SHA1(keyIDLabel + key): it names the key without revealing it (the key is 32 random bytes, so
// it cannot be searched from the id), so a value made under a key the reloader no longer has
// (lost, rotated) is told apart from one of other content. Its dashes keep it apart from a plain
// 40-hex hash.

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

const (
	// PlainLen is the length of a plain hash: 40 hex digits.
	PlainLen = 2 * sha1.Size
	// KeyedLen is the length of a keyed value: "hmac-", the key id, "-" and 40 hex digits.
	KeyedLen = len(keyedPrefix) + keyIDLen + 1 + PlainLen
	// MinKeyLen is the shortest key accepted, in bytes. The reloader makes keys of this length.
	MinKeyLen = 32

	keyedPrefix = "hmac-"
	keyIDLen    = 8
	// keyIDLabel makes the key id a hash of its own, unrelated to any HMAC the key computes.
	keyIDLabel = "reloader hash key id\x00"
)

// Key is a per-installation secret under which Secret content is hashed. Its zero value is no
// key; use NewKey.
type Key struct {
	secret []byte
	id     string
}

// NewKey returns the key made of secret, which must have at least MinKeyLen bytes.
func NewKey(secret []byte) (Key, error) {
	if len(secret) < MinKeyLen {
		return Key{}, fmt.Errorf("a hash key needs at least %d bytes, this one has %d", MinKeyLen, len(secret))
	}
	return Key{secret: bytes.Clone(secret), id: KeyID(secret)}, nil
}

// KeyID returns the id that names a key in the values made under it.
func KeyID(secret []byte) string {
	h := sha1.New()
	h.Write([]byte(keyIDLabel))
	h.Write(secret)
	return hex.EncodeToString(h.Sum(nil))[:keyIDLen]
}

// ID returns the key's id; "" for the zero Key.
func (k Key) ID() string { return k.id }

// String names the key by its id only, so that a key printed by mistake reveals nothing.
func (k Key) String() string { return "hash key " + k.id }

// GoString is String, for %#v.
func (k Key) GoString() string { return k.String() }

// Secret returns the keyed content hash of s, in the byte format of the package doc.
func (k Key) Secret(s *corev1.Secret) string {
	h := &hasher{Hash: k.mac()}
	writeBytes(h, tagBinary, s.Data)
	return k.value(h.Sum(nil))
}

// SecretKeys returns the keyed per-key sums of s, sorted by key: HMACs of each key's entry.
func (k Key) SecretKeys(s *corev1.Secret) []KeySum {
	return secretKeys(&hasher{Hash: k.mac()}, s)
}

// Subset is Subset over keyed sums, itself keyed: absent keys are named in it too, and a Secret's
// key names must not be confirmed either.
func (k Key) Subset(sums []KeySum, keys []string) string {
	return k.value(subset(k.mac(), sums, keys))
}

// KeyValue is KeyValue over keyed sums: the keyed value of the key's sum when present, else the
// keyed Subset of just that key.
func (k Key) KeyValue(sums []KeySum, key string) string {
	if sum, ok := find(sums, key); ok {
		return k.value(sum[:])
	}
	return k.Subset(nil, []string{key})
}

// mac returns a fresh HMAC-SHA1 under k. Using the zero Key is a bug that would write values
// under an empty key, so it panics.
func (k Key) mac() hash.Hash {
	if k.id == "" {
		panic("confighash: the zero Key was used; make keys with NewKey")
	}
	return hmac.New(sha1.New, k.secret)
}

// value writes sum as a keyed value.
func (k Key) value(sum []byte) string {
	b := make([]byte, 0, KeyedLen)
	b = append(b, keyedPrefix...)
	b = append(b, k.id...)
	b = append(b, '-')
	return string(hex.AppendEncode(b, sum))
}

// IsPlain reports whether v has the form of a plain hash: 40 lower-case hex digits.
func IsPlain(v string) bool { return len(v) == PlainLen && isHex(v) }

// KeyIDOf returns the id of the key a keyed value was made under. It accepts only the exact
// form Key writes, "hmac-<8 lower-case hex>-<40 lower-case hex>"; ok is false for anything else.
func KeyIDOf(v string) (id string, ok bool) {
	id, _, err := splitKeyed(v)
	return id, err == nil
}

// SumOf returns the hex digits of a keyed value's HMAC, or v itself when v is not keyed: the
// part to abbreviate in logs and Events.
func SumOf(v string) string {
	if _, sum, err := splitKeyed(v); err == nil {
		return sum
	}
	return v
}

// ParseValue checks that v is a value the reloader writes: a plain hash or a keyed one. The
// error says what is wrong.
func ParseValue(v string) error {
	if IsPlain(v) {
		return nil
	}
	_, _, err := splitKeyed(v)
	return err
}

func splitKeyed(v string) (id, sum string, err error) {
	rest, ok := strings.CutPrefix(v, keyedPrefix)
	switch {
	case !ok:
		return "", "", errors.New("neither 40 lower-case hex digits nor hmac-<key id>-<40 hex>")
	case len(v) != KeyedLen:
		return "", "", fmt.Errorf("a keyed hash has %d characters, this one %d", KeyedLen, len(v))
	case rest[keyIDLen] != '-':
		return "", "", fmt.Errorf("a keyed hash has '-' after its %d-digit key id", keyIDLen)
	}
	id, sum = rest[:keyIDLen], rest[keyIDLen+1:]
	if !isHex(id) || !isHex(sum) {
		return "", "", errors.New("a keyed hash's key id and sum are lower-case hex digits")
	}
	return id, sum, nil
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
