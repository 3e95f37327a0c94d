// Package workload is what the reloader's parts share about a workload: its queue Key, its Kind
// (how to read, cache and write objects of that kind), the View of one cached object, the index
// of its Dependents, the packed form the cache keeps, the one write path, Send, with the errors
// it answers (ErrStale, RetryLater, Refused), and what the rule says of a workload and a config: its Judgement, and a
// Dependent, a workload judged so.
package workload
