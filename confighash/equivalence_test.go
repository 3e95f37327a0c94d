package confighash

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The hashes are computed without copying values into new strings (measured: the copies were
// most of the garbage of the initial list). These plain versions state what they must equal.

func plainStakater(pairs []string) string {
	sort.Strings(pairs)
	sum := sha1.Sum([]byte(strings.Join(pairs, ";")))
	return hex.EncodeToString(sum[:])
}

func plainStakaterConfigMap(cm *corev1.ConfigMap) string {
	var pairs []string
	for k, v := range cm.Data {
		pairs = append(pairs, k+"="+v)
	}
	for k, v := range cm.BinaryData {
		pairs = append(pairs, k+"="+base64.StdEncoding.EncodeToString(v))
	}
	return plainStakater(pairs)
}

func plainStakaterSecret(s *corev1.Secret) string {
	var pairs []string
	for k, v := range s.Data {
		pairs = append(pairs, k+"="+string(v))
	}
	return plainStakater(pairs)
}

// randomKey draws from the characters a ConfigMap key may hold, with prefixes of each other
// likely ("a", "a.b", "a-b").
func randomKey(r *rand.Rand) string {
	const chars = "ab.-_9"
	var b strings.Builder
	for range 1 + r.IntN(3) {
		b.WriteByte(chars[r.IntN(len(chars))])
	}
	return b.String()
}

func TestStreamedHashesEqualThePlainOnes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		cm := &corev1.ConfigMap{Data: map[string]string{}, BinaryData: map[string][]byte{}}
		s := &corev1.Secret{Data: map[string][]byte{}}
		for range r.IntN(6) {
			v := strings.Repeat(string(rune('x'+r.IntN(3))), r.IntN(3000))
			if r.IntN(2) == 0 {
				cm.Data[randomKey(r)] = v
			} else {
				cm.BinaryData[randomKey(r)] = []byte(v + "\xff")
			}
			s.Data[randomKey(r)] = []byte(v)
		}
		for k := range cm.BinaryData { // a key lives in data or binaryData, not both
			delete(cm.Data, k)
		}
		what := fmt.Sprintf("case %d: %v %v", i, cm.Data, cm.BinaryData)
		if got, want := StakaterConfigMap(cm), plainStakaterConfigMap(cm); got != want {
			t.Fatalf("%s: StakaterConfigMap %s, want %s", what, got, want)
		}
		if got, want := StakaterSecret(s), plainStakaterSecret(s); got != want {
			t.Fatalf("%s: StakaterSecret %s, want %s", what, got, want)
		}
	}
}

// corpusDigest hashes every output of the package over a fixed random corpus; the constant in
// TestOutputsAreUnchanged was computed with the plain implementation, before values were
// streamed.
func corpusDigest() string {
	r := rand.New(rand.NewPCG(3, 4))
	h := sha1.New()
	for range 500 {
		cm := &corev1.ConfigMap{Data: map[string]string{}, BinaryData: map[string][]byte{}}
		s := &corev1.Secret{Data: map[string][]byte{}}
		for range r.IntN(5) {
			v := strings.Repeat("v", r.IntN(5000))
			cm.Data[randomKey(r)] = v
			cm.BinaryData[randomKey(r)+"-bin"] = []byte(v)
			s.Data[randomKey(r)] = []byte(v)
		}
		fmt.Fprintln(h, ConfigMap(cm), Secret(s), StakaterConfigMap(cm), StakaterSecret(s))
		for _, ks := range append(ConfigMapKeys(cm), SecretKeys(s)...) {
			fmt.Fprintln(h, ks.Key(), hex.EncodeToString(ks.Sum[:]))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestOutputsAreUnchanged(t *testing.T) {
	if got := corpusDigest(); got != "404c5ac573763fb65f2d8f348718379cc76c2542" {
		t.Fatalf("the hashes of the corpus changed: digest %s", got)
	}
}
