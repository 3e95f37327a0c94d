package confighash

import (
	"crypto/sha1"
	"encoding/hex"
)

// Packed is a value ParseValue accepts, or none, in 25 bytes and no allocation of its own: the
// reloader keeps one per config twice (its cache and its state), and as text each would take a
// 48-byte allocation (a keyed value 64) besides its 16-byte header. The zero Packed is none ("").
type Packed struct {
	form packedForm
	id   [keyIDLen / 2]byte
	sum  [sha1.Size]byte
}

type packedForm uint8

const (
	packedNone packedForm = iota
	packedPlain
	packedKeyed
)

// Pack packs v; ok is false when v is neither "" nor a value ParseValue accepts.
func Pack(v string) (p Packed, ok bool) {
	if v == "" {
		return Packed{}, true
	}
	if IsPlain(v) {
		p.form = packedPlain
		_, _ = hex.Decode(p.sum[:], []byte(v)) // IsPlain: 40 lower-case hex digits
		return p, true
	}
	id, sum, err := splitKeyed(v)
	if err != nil {
		return Packed{}, false
	}
	p.form = packedKeyed
	_, _ = hex.Decode(p.id[:], []byte(id)) // splitKeyed: lower-case hex digits
	_, _ = hex.Decode(p.sum[:], []byte(sum))
	return p, true
}

// IsZero reports whether p packs no value.
func (p Packed) IsZero() bool { return p.form == packedNone }

// String is the value p packs, as Pack read it.
func (p Packed) String() string {
	switch p.form {
	case packedPlain:
		var b [PlainLen]byte // on the stack: the string is the one allocation
		hex.Encode(b[:], p.sum[:])
		return string(b[:])
	case packedKeyed:
		var buf [KeyedLen]byte
		b := append(buf[:0], keyedPrefix...)
		b = hex.AppendEncode(b, p.id[:])
		b = append(b, '-')
		return string(hex.AppendEncode(b, p.sum[:]))
	}
	return ""
}
