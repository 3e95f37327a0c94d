package confighash

// MACs of the reloader's own notes.
//
// What the reloader writes down in the state to act on later (a Job's recreation) is input at its
// next start like any other: anyone who may patch the state ConfigMap may write such a note. A
// note therefore carries an HMAC-SHA256 under a sub-key of the hash key made for its purpose
// alone, HMAC(key, noteKeyLabel + purpose), so that a note's MAC and a content hash are never
// made under the same key. It is written "<key id>-<64 hex>": a note made under a key since lost
// is told apart from a forged one in the log.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// noteKeyLabel separates the sub-keys of notes from every other use of the hash key.
const noteKeyLabel = "reloader note key\x00"

// NoteMAC returns the MAC of msg, a note written for purpose, under k.
func (k Key) NoteMAC(purpose string, msg []byte) string {
	return k.id + "-" + hex.EncodeToString(k.noteSum(purpose, msg))
}

// VerifyNote reports whether mac is k's MAC of msg for purpose (NoteMAC), in constant time.
// otherKey is true when mac is well formed but names another key than k.
func (k Key) VerifyNote(purpose string, msg []byte, mac string) (ok, otherKey bool) {
	id, sum, found := strings.Cut(mac, "-")
	got, err := hex.DecodeString(sum)
	if !found || err != nil || len(got) != sha256.Size {
		return false, false
	}
	if id != k.id {
		return false, true
	}
	return hmac.Equal(got, k.noteSum(purpose, msg)), false
}

func (k Key) noteSum(purpose string, msg []byte) []byte {
	if k.id == "" {
		panic("confighash: the zero Key was used; make keys with NewKey")
	}
	sub := hmac.New(sha256.New, k.secret)
	sub.Write([]byte(noteKeyLabel + purpose))
	h := hmac.New(sha256.New, sub.Sum(nil))
	h.Write(msg)
	return h.Sum(nil)
}
