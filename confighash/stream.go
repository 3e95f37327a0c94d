package confighash

import (
	"crypto/sha1"
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
