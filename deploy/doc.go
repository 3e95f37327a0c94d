// Package deploy holds no code: it is the home of the reloader's deployment artifacts and of the
// tests that check them against a real API server.
//
//   - namespace/: a kustomize base for a reloader that watches only its own namespace.
//   - cluster/: a kustomize base for a reloader that watches every namespace, in the namespace
//     "reloader" unless an overlay moves it.
//   - helm/reloader/: a Helm chart covering both, plus PodMonitor, ServiceMonitor,
//     PrometheusRule, PodDisruptionBudget and NetworkPolicy. It reads its own values and those
//     of stakater Reloader's chart; helm/testdata/ holds a stakater user's values file.
//   - grafana/: a dashboard over the metrics documented in docs/metrics.md.
//
// The tests render the bases with the kustomize library, decode every manifest strictly, create it on the local test API server with a
// server-side dry run, render the chart with the pinned helm binary (tools/helm), and run the
// controller as the namespace and cluster manifests' ServiceAccounts, with exactly their Roles.
package deploy
