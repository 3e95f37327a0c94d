// Package state owns the reloader-state ConfigMaps: what the reloader last recorded of every
// tracked ConfigMap and Secret, modelled on Collaborne's kubernetes-reloader, and entries it keeps
// for others. It knows the ConfigMap format, config entries, and nothing about workloads.
//
// An entry's key is "v1.<Kind>_<name>" when the reloader watches one namespace, and
// "v1.<Kind>_<namespace>_<name>" when it watches all of them. Namespace and object names never
// contain '_', so the encoding is unambiguous. A key longer than a ConfigMap key may be (253) is
// replaced by "v1.<Kind>__<sha1 of namespace/name>", which no name can produce. A workload that
// reads only some data keys of a config has one more entry per key, "<config entry>__<data key>".
//
// A live entry's value is the config's content hash: 40 lower-case hex digits for a ConfigMap
// (and for a Secret as versions before keyed hashes wrote it), "hmac-<key id>-<40 hex>" for a
// Secret (package confighash), which no ConfigMap entry may hold. A config entry may instead be
// a tombstone, "deleted@<unix seconds>:<last content hash, or nothing>": the config did not
// exist when recorded, so that its reappearance reads as a recreation rather than as a config
// never seen. Data-key entries are never tombstones. A value of any other form is corrupt: it is
// dropped and logged, and its config counts as new.
//
// Entries of other kinds are opaque to it: an owner registers a kind (EntryKind: a key prefix, a
// check of the values, their longest length) and the store keeps its entries, fenced and
// sharded like the others, but never as tombstones. The reloader keeps holds, strips and pending
// reloads this way (their keys: reloader/internal/entrykeys). Keys of no kind it knows belong to
// someone else and are left alone.
//
// Each part reaches the state through a view, not the Store: Store.Configs for the config
// entries, Store.Kind for the entries of the kinds its owner names, which panics on a key of any
// other kind, so that no part writes another's entries. The Store itself keeps the lifecycle
// (Load, Run, Keep, Flush, Fence), the shards' stats and the first shard's other keys
// (Other, WriteOther); where each entry sits is its table's (shards.go).
//
// One ConfigMap holds at most 1 MiB, so entries spread over shards: <name>, <name>-1, ... up to
// MaxShards (32), each filled to ShardBudget (800 KiB), an entry counted at what it adds to the
// object etcd stores: its key twice (managedFields name every key once more), its value and 16
// bytes of framing. That is 26,214,400 counted bytes: 141,696 entries of the mix bench's read
// configs (54-byte keys and values of up to 61 bytes, 185 counted), 151,520 with 48-byte keys.
// The room comes from shards, not from the budget: the API server checks the whole object a
// merge patch leaves (1 MiB of data) though the patch carries only the changed keys, and etcd
// stores it whole, refusing more than 1.5 MiB (1,572,864 bytes). Counted by their data alone,
// 2,795 entries of the longest keys (data-key entries of a ConfigMap, 253-byte keys and plain
// hashes) filled a shard to 1,571,121 bytes in protobuf, 1,743 under that limit; counted by
// cost, 1,457 fill it, far under. A full rewrite (a shard created, or recreated from memory) sends its whole data, under
// 1 MiB of JSON against the API server's 3 MiB limit on a request. Load reads the shards in
// order, one GET each, until two in a row are missing (load.go, loadGap); the fence claims, Keep checks and a
// flush writes only shards that exist, a flush one merge patch per shard with changes.
//
// A new entry goes to the first shard with room and never moves (unless evicted, below): it counts
// against the budget at the size of the longest value it could take, so it can always be updated in
// place. When no shard has room the entry is kept in memory only (see Store.Unsaved) and written
// once room appears: a full state is never written past its budget. Its owner may mark a config
// spare (Configs.SetSpare: no workload reads it). A full state gives spare entries' room to entries
// that are not spare: such an entry that finds no room evicts saved spare entries of one shard to
// memory only, and the flush removes them there; a spare entry never evicts. So past the ceiling
// only spare entries are lost at a restart, unless entries that are not spare alone fill every
// shard. A key deleted and re-added before the flush returns to its old shard if that has room; if
// not, the flush removes it there, so that no key is ever stored twice. Writes are JSON merge
// patches of the changed keys only, so keys written by others survive. An unfenced store's writes
// are unconditional; a fenced one's (leader election, fence.go) name the shard's resourceVersion,
// and a conflict costs a read of that version and a second attempt.
//
// Changes are written behind: a flush starts shortly after the first change and writes all of
// them. An entry its owner calls redundant (Configs.SetRedundant) starts no flush: it goes along
// with the next one, or with the flush at exit, unless the owner asks for it (Configs.Need).
package state
