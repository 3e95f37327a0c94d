package state

// Test hooks: exported, not in an export_test.go, because state/integration's tests (another
// package) use them too.

// SetBudget sets how many bytes each shard of s may hold, so that a test fills every shard with
// a few entries rather than megabytes. Call it before Load or any Set.
func SetBudget(s *Store, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.t.room.budget = bytes
}

// Reserved is how many bytes key takes of its shard's budget.
func Reserved(key string) int { return reserved(key) }
