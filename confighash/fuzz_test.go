package confighash

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"maps"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The seed corpus is in testdata/fuzz/FuzzHashFormat/; `go test` runs it as a test.

// refEntry appends one entry of the documented byte format: tag, 8-byte big-endian key length,
// key, 8-byte big-endian value length, value.
func refEntry(b []byte, tag byte, key string, value []byte) []byte {
	b = append(b, tag)
	b = binary.BigEndian.AppendUint64(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.BigEndian.AppendUint64(b, uint64(len(value)))
	return append(b, value...)
}

// refSection appends a section's entries, keys in ascending byte order.
func refSection(b []byte, tag byte, m map[string][]byte) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b = refEntry(b, tag, k, m[k])
	}
	return b
}

func stringBytes(m map[string]string) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}

// refConfigMapStream and refSecretStream are the package doc's byte streams, built plainly.
func refConfigMapStream(cm *corev1.ConfigMap) []byte {
	return refSection(refSection(nil, 'd', stringBytes(cm.Data)), 'b', cm.BinaryData)
}

func refSecretStream(s *corev1.Secret) []byte { return refSection(nil, 'b', s.Data) }

func hexSHA1(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// refDecode reads a stream back into its sections: that it gives back the content proves the
// stream, and so the hash up to SHA1 collisions, tells every two contents apart.
func refDecode(b []byte) (data map[string]string, bin map[string][]byte, err error) {
	data, bin = map[string]string{}, map[string][]byte{}
	field := func() ([]byte, error) {
		if len(b) < 8 {
			return nil, errors.New("short length")
		}
		n := binary.BigEndian.Uint64(b[:8])
		b = b[8:]
		if n > uint64(len(b)) {
			return nil, errors.New("short field")
		}
		f := b[:n]
		b = b[n:]
		return f, nil
	}
	inBinary := false
	for len(b) > 0 {
		tag := b[0]
		b = b[1:]
		switch {
		case tag == 'b':
			inBinary = true
		case tag != 'd' || inBinary:
			return nil, nil, errors.New("bad tag")
		}
		k, err := field()
		if err != nil {
			return nil, nil, err
		}
		v, err := field()
		if err != nil {
			return nil, nil, err
		}
		if tag == 'd' {
			data[string(k)] = string(v)
		} else {
			bin[string(k)] = v
		}
	}
	return data, bin, nil
}

// refSubset is Subset as its doc states it.
func refSubset(sums []KeySum, keys []string) string {
	wanted := append([]string(nil), keys...)
	sort.Strings(wanted)
	var b []byte
	for _, k := range wanted {
		i := slicesIndex(sums, k)
		if i >= 0 {
			b = append(append(b, 'p'), sums[i].Sum[:]...)
			continue
		}
		b = append(binary.BigEndian.AppendUint64(append(b, 'a'), uint64(len(k))), k...)
	}
	return hexSHA1(b)
}

func slicesIndex(sums []KeySum, key string) int {
	for i, s := range sums {
		if s.Key() == key {
			return i
		}
	}
	return -1
}

// fuzzContent reads fuzz input as a ConfigMap, a Secret and a list of wanted keys. Each record
// is: a selector byte (which of data, binaryData, Secret data, wanted), a key-length byte (keys
// of 0-7 bytes, so keys collide and prefix each other), the key, a value-length byte (with its
// top bit set, the value is repeated to 16 times as long, past the hasher's 512-byte buffer),
// the value. A key already in data is not also put in binaryData: the API server refuses that.
func fuzzContent(in []byte) (*corev1.ConfigMap, *corev1.Secret, []string) {
	cm := &corev1.ConfigMap{Data: map[string]string{}, BinaryData: map[string][]byte{}}
	s := &corev1.Secret{Data: map[string][]byte{}}
	var wanted []string
	next := func(n int) []byte {
		n = min(n, len(in))
		b := in[:n]
		in = in[n:]
		return b
	}
	for len(in) > 0 {
		sel := next(1)[0]
		kl := next(1)
		if len(kl) == 0 {
			break
		}
		key := string(next(int(kl[0] % 8)))
		var value []byte
		if vl := next(1); len(vl) > 0 {
			value = next(int(vl[0] & 0x7f))
			if vl[0]&0x80 != 0 {
				value = bytes.Repeat(value, 16)
			}
		}
		switch sel % 4 {
		case 0:
			if _, ok := cm.BinaryData[key]; !ok {
				cm.Data[key] = string(value)
			}
		case 1:
			if _, ok := cm.Data[key]; !ok {
				cm.BinaryData[key] = value
			}
		case 2:
			s.Data[key] = value
		case 3:
			wanted = append(wanted, key)
		}
	}
	return cm, s, wanted
}

// FuzzHashFormat: for any content, ConfigMap and Secret equal the SHA1 of the package doc's byte
// stream built plainly, the stream decodes back to the content (so distinct contents hash
// apart), and ConfigMapKeys, SecretKeys, Subset and KeyValue equal their documented forms.
// Moving a key between data and binaryData, or splitting a value across two keys, changes the
// hash.
func FuzzHashFormat(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		cm, s, wanted := fuzzContent(in)
		stream := refConfigMapStream(cm)
		if got, want := ConfigMap(cm), hexSHA1(stream); got != want {
			t.Fatalf("ConfigMap(%v, %v) = %s, want %s", cm.Data, cm.BinaryData, got, want)
		}
		data, bin, err := refDecode(stream)
		if err != nil || !maps.Equal(data, cm.Data) || !maps.EqualFunc(bin, cm.BinaryData, bytes.Equal) {
			t.Fatalf("the stream of %v, %v decodes to %v, %v (%v)", cm.Data, cm.BinaryData, data, bin, err)
		}
		if got, want := Secret(s), hexSHA1(refSecretStream(s)); got != want {
			t.Fatalf("Secret(%v) = %s, want %s", s.Data, got, want)
		}

		cmSums, secretSums := ConfigMapKeys(cm), SecretKeys(s)
		var wantSums []KeySum
		for k, v := range cm.Data {
			wantSums = append(wantSums, NewKeySum(k, sha1.Sum(refEntry(nil, 'd', k, []byte(v)))))
		}
		for k, v := range cm.BinaryData {
			wantSums = append(wantSums, NewKeySum(k, sha1.Sum(refEntry(nil, 'b', k, v))))
		}
		checkSums(t, "ConfigMapKeys", cmSums, wantSums)
		wantSums = nil
		for k, v := range s.Data {
			wantSums = append(wantSums, NewKeySum(k, sha1.Sum(refEntry(nil, 'b', k, v))))
		}
		checkSums(t, "SecretKeys", secretSums, wantSums)

		for _, sums := range [][]KeySum{cmSums, secretSums} {
			if got, want := Subset(sums, wanted), refSubset(sums, wanted); got != want {
				t.Fatalf("Subset(%v) = %s, want %s", wanted, got, want)
			}
			for _, k := range wanted {
				want := refSubset(nil, []string{k})
				if i := slicesIndex(sums, k); i >= 0 {
					want = hex.EncodeToString(sums[i].Sum[:])
				}
				if got := KeyValue(sums, k); got != want {
					t.Fatalf("KeyValue(%q) = %s, want %s", k, got, want)
				}
			}
		}

		// Two edits the format must tell apart, on the smallest data key.
		keys := sortedKeys(cm.Data)
		if len(keys) == 0 {
			return
		}
		k, v := keys[0], cm.Data[keys[0]]
		moved := cm.DeepCopy()
		delete(moved.Data, k)
		moved.BinaryData[k] = []byte(v)
		if ConfigMap(moved) == ConfigMap(cm) {
			t.Fatalf("moving %q from data to binaryData keeps the hash", k)
		}
		if len(v) < 2 {
			return
		}
		split := cm.DeepCopy()
		k2 := k + "\x00" // sorts right after k: a new key, unless some key already is it
		_, inData := cm.Data[k2]
		if _, inBinary := cm.BinaryData[k2]; inData || inBinary {
			return
		}
		split.Data[k], split.Data[k2] = v[:len(v)/2], v[len(v)/2:]
		if ConfigMap(split) == ConfigMap(cm) {
			t.Fatalf("splitting %q's value %q across %q and %q keeps the hash", k, v, k, k2)
		}
	})
}

// checkSums compares per-key sums with the expected ones, which are in no order.
func checkSums(t *testing.T, what string, got, want []KeySum) {
	t.Helper()
	sort.Slice(want, func(i, j int) bool { return want[i].Key() < want[j].Key() })
	if len(got) != len(want) {
		t.Fatalf("%s: %d sums, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s[%d] = %q %x, want %q %x", what, i, got[i].Key(), got[i].Sum, want[i].Key(), want[i].Sum)
		}
	}
}
