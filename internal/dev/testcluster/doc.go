// Package testcluster owns the real, local Kubernetes control plane that the
// reloader tests run against.
//
// It builds the pinned etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok binaries from the modules under tools/ into a cache
// outside the source tree (EnsureBinaries), generates the certificates and
// credentials the cluster needs, starts every component as a child process
// on free 127.0.0.1 ports (Start), and tears it all down again (Stop).
//
// With Options.Pods the cluster also runs the controller manager, the
// scheduler and kwok with one fake Ready node, so Deployments really roll out
// pods without a kubelet or container runtime. A pod whose container sets
// NotReadyWhen to the value of another of its variables runs but never becomes
// Ready, so a rollout onto a "broken" config really fails (notready.go).
//
// Tests usually share one cluster per package through TestMain:
//
//	var cluster *testcluster.Cluster
//
//	func TestMain(m *testing.M) {
//		os.Exit(testcluster.Main(m, testcluster.Options{Pods: true}, &cluster))
//	}
package testcluster
