package state

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
)

// maxKeyLen is the longest key a ConfigMap accepts.
const maxKeyLen = 253

// ownPrefixes start the keys of our entries; other keys in the ConfigMaps belong to someone else.
var ownPrefixes = [...]string{"v1.ConfigMap_", "v1.Secret_"}

// Key returns the entry key of a config. namespace is empty in single-namespace mode.
func Key(kind, namespace, name string) string {
	prefix := "v1." + kind + "_"
	k := prefix + name
	if namespace != "" {
		k = prefix + namespace + "_" + name
	}
	if len(k) <= maxKeyLen {
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
	for _, p := range ownPrefixes {
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

// IsHash reports whether v has the form of a content hash: 40 lower-case hex digits.
func IsHash(v string) bool {
	if len(v) != 40 {
		return false
	}
	for _, c := range v {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// isOwn reports whether key is one of our entries rather than someone else's.
func isOwn(key string) bool {
	for _, p := range ownPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// isConfigKey reports whether key is one of our config entries, the only kind that may be a
// tombstone.
func isConfigKey(key string) bool {
	return isOwn(key) && ConfigOf(key) == key
}
