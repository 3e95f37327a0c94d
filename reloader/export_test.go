package reloader

// IsStale exposes isStale to the tests, which check it against the real API server's answers.
var IsStale = isStale
