package confighash

import (
	"crypto/sha1"
	"encoding/base64"
	"hash"
)

// hasher is a SHA1 that takes strings without converting them to []byte: a config's values are
// copied through a small buffer instead of into a new byte slice each. Measured, those copies
// (three or four per value, for the content hash, the per-key sums and stakater's hash) were
// most of the garbage made while the initial list streams in.
type hasher struct {
	hash.Hash
	buf [512]byte
}

func newHasher() *hasher { return &hasher{Hash: sha1.New()} }

func (h *hasher) writeString(s string) {
	for len(s) > 0 {
		n := copy(h.buf[:], s)
		h.Write(h.buf[:n])
		s = s[n:]
	}
}

// writeBase64 writes v standard base64-encoded, padded, through the buffer instead of into a new
// string. Every chunk but the last is a multiple of 3 bytes long, so only the last is padded: the
// bytes written are those of base64.StdEncoding.EncodeToString(v).
func (h *hasher) writeBase64(v []byte) {
	const chunk = len(h.buf) / 4 * 3
	for len(v) > 0 {
		n := min(chunk, len(v))
		m := base64.StdEncoding.EncodedLen(n)
		base64.StdEncoding.Encode(h.buf[:m], v[:n])
		h.Write(h.buf[:m])
		v = v[n:]
	}
}
