package configs

import "github.com/reloader/reloader/confighash"

// fixedKey is a loaded hash key.
type fixedKey struct{ key confighash.Key }

func (k fixedKey) Key() confighash.Key { return k.key }
