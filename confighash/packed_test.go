package confighash_test

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/reloader/reloader/confighash"
)

func TestPackReadsBackEveryValueItAccepts(t *testing.T) {
	plain := strings.Repeat("0123456789", 4)
	keyed := "hmac-0a1b2c3d-" + strings.Repeat("fedcba9876", 4)
	for _, v := range []string{"", plain, keyed, strings.Repeat("0", 40), "hmac-00000000-" + strings.Repeat("0", 40)} {
		p, ok := confighash.Pack(v)
		if !ok {
			t.Errorf("Pack(%q) refused a value ParseValue accepts", v)
			continue
		}
		if got := p.String(); got != v {
			t.Errorf("Pack(%q).String() = %q", v, got)
		}
		if p.IsZero() != (v == "") {
			t.Errorf("Pack(%q).IsZero() = %t", v, p.IsZero())
		}
	}
}

func TestPackRefusesWhatParseValueRefuses(t *testing.T) {
	for _, v := range []string{
		strings.Repeat("A", 40),                    // upper case
		strings.Repeat("0", 39),                    // short
		"hmac-0A1B2C3D-" + strings.Repeat("0", 40), // upper-case key id
		"hmac-0a1b2c3d_" + strings.Repeat("0", 40), // no dash
		"hmac-0a1b2c3d-" + strings.Repeat("0", 41), // long
		"deleted@1:" + strings.Repeat("0", 40),     // a tombstone's text
		"sha1:" + strings.Repeat("0", 40),          // another tool's form
	} {
		if confighash.ParseValue(v) == nil {
			t.Fatalf("test value %q is accepted by ParseValue", v)
		}
		if p, ok := confighash.Pack(v); ok {
			t.Errorf("Pack(%q) = %q, want refused", v, p.String())
		}
	}
}

func TestPackedValuesCompareAsTheirText(t *testing.T) {
	a, _ := confighash.Pack(strings.Repeat("ab", 20))
	b, _ := confighash.Pack(strings.Repeat("ab", 20))
	c, _ := confighash.Pack("hmac-00000000-" + strings.Repeat("ab", 20)) // same sum, keyed
	d, _ := confighash.Pack("hmac-00000001-" + strings.Repeat("ab", 20)) // another key
	if a != b {
		t.Error("two packs of one value differ")
	}
	if a == c || c == d || a == (confighash.Packed{}) {
		t.Error("packs of different values are equal")
	}
	if size := unsafe.Sizeof(a); size != 25 {
		t.Errorf("a Packed takes %d bytes, want 25", size)
	}
}

// Every judgement reads hashes as text: each read allocates the string, nothing else.
func TestPackedStringAllocatesTheStringOnly(t *testing.T) {
	for _, v := range []string{strings.Repeat("0123456789", 4), "hmac-0a1b2c3d-" + strings.Repeat("fedcba9876", 4)} {
		p, _ := confighash.Pack(v)
		if n := testing.AllocsPerRun(100, func() { _ = p.String() }); n != 1 {
			t.Errorf("Pack(%q).String() allocates %v times, want 1", v, n)
		}
	}
}
