package state

import (
	"log/slog"
	"sync"
	"time"
)

// Configs is the view of the config entries and their data-key entries (Store.Configs): what the
// reloader last recorded of each tracked ConfigMap and Secret. It writes config entries only: a
// content hash under a key that is no config's is refused and logged. Get, Count and DeleteEntry
// take any key of ours (Count is how the hash key's report sees holds and strips too); a part
// that owns a registered kind reaches its entries through its KindView instead.
type Configs struct {
	mu  *sync.Mutex // the store's
	t   *table
	log *slog.Logger
}

// validContent reports whether hash may be recorded as the content of key; if not, it logs why:
// the value would not load back.
func validContent(log *slog.Logger, key, hash string) bool {
	if !isConfigPrefixed(key) {
		log.Error("refusing to record a content hash under a key that is no config's", "key", key)
		return false
	}
	if err := mayHold(key, hash); err != nil {
		log.Error("refusing to record a state value that is not a content hash", "key", key, "reason", err.Error())
		return false
	}
	return true
}

// Get returns what the state holds for key.
func (c *Configs) Get(key string) (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.t.entries.m[key]
	return c.t.entries.public(key, e), ok
}

// Set records hash as the content of key, a config entry or a data-key entry, reviving a
// tombstone; it is written by the next flush. A value that is not a content hash, a keyed hash
// under a ConfigMap, or a key that is no config's, is refused and logged: it would not load back.
func (c *Configs) Set(key, hash string) {
	if !validContent(c.log, key, hash) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t.put(key, Entry{Hash: hash})
}

// SetRedundant is Set for an entry that restates what the owner keeps elsewhere as long as
// nothing else asks for it: it is written along with the next flush, or by the flush at exit,
// and no flush is made for it alone. Need asks for it.
func (c *Configs) SetRedundant(key, hash string) {
	if !validContent(c.log, key, hash) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, due := c.t.due.dirty[key]
	if !c.t.update(key, Entry{Hash: hash}) || due {
		return
	}
	c.t.due.redundant[key] = struct{}{}
}

// Need makes an entry set with SetRedundant, and not written since, due like any other: the
// next flush, which it starts, writes it.
func (c *Configs) Need(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.t.due.redundant[key]; ok {
		delete(c.t.due.redundant, key)
		c.t.due.mark(key)
	}
}

// Tombstone marks a config entry deleted, keeping hash as its last content and its data-key
// children untouched. A config already tombstoned keeps its Since; hash "" keeps a known hash.
// A data-key entry or a hash of the wrong form is refused and logged: it would not load back.
func (c *Configs) Tombstone(config, hash string, at time.Time) {
	if !isConfigEntry(config) || hash != "" && mayHold(config, hash) != nil {
		c.log.Error("refusing to record a tombstone that is not a config entry with a content hash or none",
			"key", config)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t.tombstone(config, hash, at)
}

// Redate moves a tombstone's time to at, keeping its content and data-key entries: the config
// was seen deleted again. A live entry, or none, is left alone.
func (c *Configs) Redate(config string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.t.entries.m[config]; ok && e.deleted {
		next := c.t.entries.public(config, e)
		next.Since = sinceOf(at)
		c.t.put(config, next)
	}
}

// TombstoneMissing tombstones (at `at`) every live config entry for which live(config) is false,
// and returns how many. A config that has only data-key entries left, and is not live, gets a
// tombstone without a hash, so that its entries are pruned along with it rather than leaked.
// Nothing is deleted. live is called with the store locked and must not use it.
func (c *Configs) TombstoneMissing(live func(config string) bool, at time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var missing []string
	for k, e := range c.t.entries.m {
		if isConfigEntry(k) && !e.deleted && !live(k) {
			missing = append(missing, k)
		}
	}
	for config := range c.t.children {
		if _, ok := c.t.entries.m[config]; !ok && isConfigEntry(config) && !live(config) {
			missing = append(missing, config)
		}
	}
	for _, k := range missing {
		c.t.tombstone(k, "", at)
	}
	return len(missing)
}

// Count returns how many entries match; match is called with the store locked and must not use
// it.
func (c *Configs) Count(match func(key string, e Entry) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, e := range c.t.entries.m {
		if match(k, c.t.entries.public(k, e)) {
			n++
		}
	}
	return n
}

// ConfigKeys returns the key of every config entry, live or tombstoned.
func (c *Configs) ConfigKeys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k := range c.t.entries.m {
		if isConfigEntry(k) {
			out = append(out, k)
		}
	}
	return out
}

// Tombstones returns a snapshot of every tombstoned config entry (key → Entry).
func (c *Configs) Tombstones() map[string]Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]Entry{}
	for k, e := range c.t.entries.m {
		if e.deleted {
			out[k] = c.t.entries.public(k, e)
		}
	}
	return out
}

// DeleteEntry removes one entry, such as a single data-key entry; the removal is written by the
// next flush.
func (c *Configs) DeleteEntry(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t.remove(key)
}

// Delete removes a config's entry, tombstone or not, and its data-key entries; the removal is
// written by the next flush.
func (c *Configs) Delete(config string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.t.children[config] {
		c.t.remove(k)
	}
	c.t.remove(config)
	c.t.setSpare(config, false)
}

// SetSpare marks config (a config entry key) spare or not: the entries of a spare config are
// kept like any other while there is room, but when the state is full an entry that is not spare
// takes a spare one's room, and that one is kept in memory only (Unsaved) until room appears. A
// spare entry never takes another's room. An entry that stops being spare while in memory only
// is written once room is found, by evicting a spare one if need be, at the next flush.
func (c *Configs) SetSpare(config string, spare bool) {
	if !isConfigEntry(config) {
		c.log.Error("refusing to mark spare a key that is no config entry", "key", config)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, was := c.t.spare[config]
	if was == spare {
		return
	}
	c.t.setSpare(config, spare)
	if !spare && c.t.unsavedIn(config) {
		c.t.due.wake()
	}
}

// UnsavedSpare returns how many of the entries kept in memory only (Unsaved) are spare ones.
func (c *Configs) UnsavedSpare() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k := range c.t.room.unsaved {
		if c.t.isSpare(k) {
			n++
		}
	}
	return n
}

// KeepDataKeys removes config's data-key entries that are not in keep; the removals are written
// by the next flush.
func (c *Configs) KeepDataKeys(config string, keep map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.t.children[config] {
		if !keep[k] {
			c.t.remove(k)
		}
	}
}
