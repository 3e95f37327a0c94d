package state

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/reloader/reloader/confighash"
)

// maxKeyLen is the longest key a ConfigMap accepts.
const maxKeyLen = 253

// maxConfigKeyLen is the longest config entry key kept verbatim: a data-key entry built on it,
// even in its hashed form "<config>__-<sha1>", still fits maxKeyLen.
const maxConfigKeyLen = maxKeyLen - len("__-") - 2*sha1.Size

// configPrefixes start the keys of config entries and their data-key entries.
var configPrefixes = [...]string{"v1.ConfigMap_", secretPrefix}

// Key returns the entry key of a config. namespace is empty in single-namespace mode.
func Key(kind, namespace, name string) string {
	prefix := "v1." + kind + "_"
	k := prefix + name
	if namespace != "" {
		k = prefix + namespace + "_" + name
	}
	if len(k) <= maxConfigKeyLen {
		return k
	}
	sum := sha1.Sum([]byte(namespace + "/" + name))
	return prefix + "_" + hex.EncodeToString(sum[:])
}

// KeyOf returns the entry key of one data key of a config, for workloads that read only that key:
// "<config entry>__<data key>". The config part never contains "__" past its kind prefix, so the
// split is unambiguous; an over-long key ends in "__-<sha1 of the data key>" instead.
func KeyOf(config, dataKey string) string {
	k := config + "__" + dataKey
	if len(k) <= maxKeyLen {
		return k
	}
	sum := sha1.Sum([]byte(dataKey))
	return config + "__-" + hex.EncodeToString(sum[:])
}

// ConfigOf returns the config entry key that key belongs to: key itself, or the config part of a
// data-key entry.
func ConfigOf(key string) string {
	for _, p := range configPrefixes {
		rest, ok := strings.CutPrefix(key, p)
		if !ok {
			continue
		}
		// A hashed config key starts its rest with '_': skip it before looking for "__".
		skip := 0
		if strings.HasPrefix(rest, "_") {
			skip = 1
		}
		if i := strings.Index(rest[skip:], "__"); i >= 0 {
			return p + rest[:skip+i]
		}
		return key
	}
	return key
}

// IsHash reports whether v has the form of a content hash: a plain one, 40 lower-case hex
// digits, or a keyed one, "hmac-<key id>-<40 hex>" (package confighash), which only a Secret's
// entries hold.
func IsHash(v string) bool { return confighash.ParseValue(v) == nil }

// secretPrefix starts the keys of a Secret's entries, the only ones that may hold a keyed hash.
const secretPrefix = "v1.Secret_"

// mayHold reports whether the entry of key may hold hash: a keyed hash only under a Secret, so
// that the room reserved for other entries (a plain hash) is never outgrown.
func mayHold(key, hash string) error {
	if err := confighash.ParseValue(hash); err != nil {
		return err
	}
	if _, keyed := confighash.KeyIDOf(hash); keyed && KindOf(key) != "Secret" {
		return errors.New("only a Secret's entries hold keyed hashes")
	}
	return nil
}

// KindOf returns the kind of config ("ConfigMap", "Secret") an entry key belongs to, data-key
// entries included; "" for a key that is no config's.
func KindOf(key string) string {
	for _, p := range configPrefixes {
		if strings.HasPrefix(key, p) {
			return strings.TrimSuffix(strings.TrimPrefix(p, "v1."), "_")
		}
	}
	return ""
}

// isConfigPrefixed reports whether key is a config entry or one of its data-key entries.
func isConfigPrefixed(key string) bool { return KindOf(key) != "" }

// isConfigEntry reports whether key is a config entry (not a data-key entry), the only kind that
// may be a tombstone.
func isConfigEntry(key string) bool { return isConfigPrefixed(key) && ConfigOf(key) == key }
