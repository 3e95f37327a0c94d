// Package checker decides, from what happened, whether the reloader kept its promises over a
// random sequence: a seed and a generator version give the sequence (Generate), a Recorder keeps
// the checker's own writes and every change a watch of the API server shows, and the oracle
// judges that history alone (Recorder.Lost, Recorder.Excess and the rules beside them). It runs
// nothing against a cluster: package e2e executes the sequences against the real binary and
// reports each write here, and the tests here run in process.
package checker
