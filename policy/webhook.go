package policy

// WebhookDue decides, with --webhook-url, whether a config's present state calls the webhook
// instead of reloading its dependents: current is its content (exists false: it does not exist)
// and recorded is the state's entry, the content last notified. As with workloads, a config the
// state has never seen calls nothing (first start), a content equal to the entry calls nothing
// (a restart of the reloader, a resync), and a value made under a lost hash key cannot be
// compared and calls nothing. A deletion calls it only with --reload-on-delete, and the
// appearance of a config that did not exist only with --reload-on-create; a recreation with
// other content than before the deletion calls it in any case.
func WebhookDue(exists bool, current Content, recorded Recorded, onCreate, onDelete bool) bool {
	switch {
	case !recorded.Known:
		return false
	case !exists:
		return !recorded.Deleted && onDelete
	case recorded.Deleted && recorded.Hash == "":
		return onCreate
	}
	return current.Match(recorded.Hash) == Differs
}
