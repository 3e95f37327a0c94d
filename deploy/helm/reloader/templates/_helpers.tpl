{{/* Chart name, at most 63 characters. */}}
{{- define "reloader.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Name of every object of the release: fullnameOverride, else the release name when it already
contains the chart name, else <release>-<chart>.
*/}}
{{- define "reloader.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if include "reloader.stakaterLayout" . -}}
{{- printf "%s-%s" .Release.Name (default .Chart.Name .Values.nameOverride) | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "reloader.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
stakater's layout: the object name and pod selector stakater Reloader's chart gives a release
(app: <release>-<chart>, release: <release>), so that helm upgrade over a stakater release keeps
its Deployment, whose selector cannot change. On with stakaterLabels: true, or, left null, when
any reloader.* value is given. Prints "true" or nothing.
*/}}
{{- define "reloader.stakaterLayout" -}}
{{- if kindIs "bool" .Values.stakaterLabels -}}
{{- if .Values.stakaterLabels }}true{{ end -}}
{{- else if or .Values.reloader (include "reloader.previous" . | fromJson) -}}
true
{{- end -}}
{{- end -}}

{{/*
The release's live Deployment in stakater's layout (selected by app and release), found with
lookup: stakater Reloader's chart's, or this chart's in that layout. JSON {name, selector,
clusterWide}, or {} when there is none (and always under helm template and --dry-run).
clusterWide: a ClusterRoleBinding of this release binds a ServiceAccount of the release
namespace, so watching every namespace grants nothing the cluster did not already grant.
*/}}
{{- define "reloader.previous" -}}
{{- $out := dict -}}
{{- range (lookup "apps/v1" "Deployment" .Release.Namespace "").items | default list -}}
{{- $sel := .spec.selector.matchLabels | default dict -}}
{{- if and (eq (index (.metadata.annotations | default dict) "meta.helm.sh/release-name") $.Release.Name) (eq (toString $sel.release) $.Release.Name) $sel.app -}}
{{- $out = dict "name" .metadata.name "selector" $sel "clusterWide" false -}}
{{- end -}}
{{- end -}}
{{- if $out -}}
{{- range $name := list (printf "%s-role-binding" $out.name) $out.name -}}
{{- $b := lookup "rbac.authorization.k8s.io/v1" "ClusterRoleBinding" "" $name -}}
{{- $a := ($b.metadata | default dict).annotations | default dict -}}
{{- if and (eq (index $a "meta.helm.sh/release-name") $.Release.Name) (eq (index $a "meta.helm.sh/release-namespace") $.Release.Namespace) -}}
{{- range $b.subjects | default list -}}
{{- if and (eq .kind "ServiceAccount") (eq (toString .namespace) $.Release.Namespace) }}{{ $_ := set $out "clusterWide" true }}{{ end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* Labels that select the pods; stakater's reloader.matchLabels adds to them. */}}
{{- define "reloader.selectorLabels" -}}
{{- if include "reloader.stakaterLayout" . -}}
app: {{ include "reloader.fullname" . }}
release: {{ .Release.Name | quote }}
{{- else -}}
app.kubernetes.io/name: {{ include "reloader.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
{{- with (.Values.reloader | default dict).matchLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "reloader.labels" -}}
{{ include "reloader.selectorLabels" . }}
{{- if include "reloader.stakaterLayout" . }}
app.kubernetes.io/name: {{ include "reloader.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "reloader.serviceAccountName" -}}
{{- $sa := (include "reloader.settings" . | fromJson).serviceAccount -}}
{{- if $sa.create -}}
{{- default (include "reloader.fullname" .) $sa.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" $sa.name -}}
{{- end -}}
{{- end -}}

{{/* imagePullSecrets and global.imagePullSecrets, as {name: ...} entries (stakater's chart
takes bare names too). YAML list. */}}
{{- define "reloader.imagePullSecrets" -}}
{{- $out := list -}}
{{- range concat .Values.imagePullSecrets ((.Values.global | default dict).imagePullSecrets | default list) -}}
{{- $out = append $out (kindIs "string" . | ternary (dict "name" .) .) -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* The reloader's arguments. YAML list. */}}
{{- define "reloader.args" -}}
{{- $s := include "reloader.settings" . | fromJson -}}
{{- if $s.namespaces }}
- --namespaces={{ join "," $s.namespaces }}
{{- else }}
{{- if not $s.watchGlobally }}
- --namespace=$(POD_NAMESPACE)
{{- end }}
- --state-namespace=$(POD_NAMESPACE)
{{- end }}
- --configmap={{ .Values.stateConfigMap }}
- --hash-key-secret={{ .Values.hashKeySecret }}
- --port={{ .Values.port }}
- --coalesce-period={{ .Values.coalescePeriod }}
{{- with .Values.coalesceMaxWait }}
- --coalesce-max-wait={{ . }}
{{- end }}
- --shutdown-grace={{ .Values.shutdownGrace }}
- --reload-strategy={{ $s.reloadStrategy }}
- --log-format={{ $s.logFormat }}
- --log-level={{ $s.logLevel }}
{{- if $s.leaderElect }}
- --leader-elect
- --leader-election-id={{ .Values.leaderElection.id }}
{{- end }}
{{- range $flag, $key := dict "is-argo-rollouts" "isArgoRollouts" "is-openshift" "isOpenshift" "auto-reload-all" "autoReloadAll"
  "reload-on-create" "reloadOnCreate" "reload-on-delete" "reloadOnDelete" "sync-after-restart" "syncAfterRestart"
  "metrics-by-namespace" "enableMetricsByNamespace" }}
{{- if index $s $key }}
- --{{ $flag }}
{{- end }}
{{- end }}
{{- if $s.enablePprof }}
- --enable-pprof
- --pprof-addr={{ $s.pprofAddr }}
{{- end }}
{{- range $flag, $key := dict "namespace-selector" "namespaceSelector" "namespaces-to-ignore" "namespacesToIgnore"
  "resource-label-selector" "resourceLabelSelector" "resources-to-ignore" "resourcesToIgnore" "webhook-url" "webhookUrl" }}
{{- with index $s $key }}
- {{ printf "--%s=%s" $flag . | quote }}
{{- end }}
{{- end }}
{{- with $s.ignoredWorkloadTypes }}
- --ignored-workload-types={{ join "," . }}
{{- end }}
{{- /* The reloader's own default is helm.sh/release.v1,kubernetes.io/service-account-token; "" caches every Secret type. */}}
{{- if ne (toString .Values.ignoreSecretTypes) "helm.sh/release.v1,kubernetes.io/service-account-token" }}
- {{ printf "--ignore-secret-types=%s" (toString .Values.ignoreSecretTypes) | quote }}
{{- end }}
{{- range concat $s.annotationFlags .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}

{{/* The state ConfigMap and its shards: <name>, <name>-1 ... <name>-31 (state.MaxShards = 32). */}}
{{- define "reloader.stateShards" -}}
{{- $names := list .Values.stateConfigMap -}}
{{- range $i := untilStep 1 32 1 -}}
{{- $names = append $names (printf "%s-%d" $.Values.stateConfigMap $i) -}}
{{- end -}}
{{- toJson $names -}}
{{- end -}}

{{/*
Rules for reading configs and restarting workloads; they go into the Role or, with
watchGlobally, the ClusterRole.
*/}}
{{- define "reloader.watchRules" -}}
{{- $s := include "reloader.settings" . | fromJson -}}
- apiGroups: [""]
  resources: [configmaps, secrets]
  verbs: [get, list, watch]
{{- if $s.watchGlobally }}
- apiGroups: [""]
  resources: [namespaces]
  verbs: [get, list, watch]
{{- end }}
- apiGroups: [apps]
  resources: [deployments, statefulsets, daemonsets]
  verbs: [get, list, watch, patch]
- apiGroups: [batch]
  resources: [cronjobs]
  verbs: [get, list, watch, patch]
- apiGroups: [batch]
  resources: [jobs]
  verbs: [get, list, watch, create, delete]
{{- if $s.isArgoRollouts }}
- apiGroups: [argoproj.io]
  resources: [rollouts]
  verbs: [get, list, watch, patch]
{{- end }}
{{- if $s.isOpenshift }}
- apiGroups: [apps.openshift.io]
  resources: [deploymentconfigs]
  verbs: [get, list, watch, patch]
{{- end }}
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
{{- end -}}

{{/*
Rules in the release namespace only: the state shards, the hash key Secret and the
leader-election Lease.
*/}}
{{- define "reloader.ownRules" -}}
{{ include "reloader.stateRules" . }}
{{- if (include "reloader.settings" . | fromJson).leaderElect }}
{{ include "reloader.leaseRules" . }}
{{- end }}
{{- end -}}

{{/* The state shards and the hash key Secret, in the namespace that keeps the state. */}}
{{- define "reloader.stateRules" -}}
- apiGroups: [""]
  resources: [configmaps]
  resourceNames: {{ include "reloader.stateShards" . }}
  verbs: [patch]
- apiGroups: [""]
  resources: [configmaps]
  verbs: [create]
{{- /* The hash key Secret, made on the first start; create cannot be limited by name. */}}
- apiGroups: [""]
  resources: [secrets]
  verbs: [create]
{{- end -}}

{{/* The leader-election Lease, in the release namespace. */}}
{{- define "reloader.leaseRules" -}}
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [create]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  resourceNames: [{{ .Values.leaderElection.id | quote }}]
  verbs: [get, update]
{{- end -}}

{{/* Label matchers that select this release's series in alert expressions. The namespace
only, by default: the job label is whatever the scrape configuration names it (the
ServiceMonitor's Service, or kubernetes-pods for a scrape by the prometheus.io annotations). */}}
{{- define "reloader.alertSelector" -}}
{{- .Values.prometheusRule.selector | default (printf "namespace=%q" .Release.Namespace) -}}
{{- end -}}

{{/* Rendering fails on combinations that would not work. */}}
{{- define "reloader.validate" -}}
{{- $s := include "reloader.settings" . | fromJson -}}
{{- if and (gt (int $s.replicas) 1) (not $s.leaderElect) -}}
{{- fail (printf "replicaCount=%d needs leaderElection.enabled=true: without leader election every replica restarts workloads and writes the state" (int $s.replicas)) -}}
{{- end -}}
{{- if and $s.namespaces $s.watchGlobally -}}
{{- fail "namespaces lists the namespaces to watch: it needs watchGlobally=false (stakater: reloader.namespaces needs reloader.watchGlobally=false)" -}}
{{- end -}}
{{- if and (or $s.namespaceSelector $s.namespacesToIgnore) (not $s.watchGlobally) -}}
{{- fail "namespaceSelector and namespacesToIgnore need watchGlobally=true: a namespace-scoped reloader watches only its own namespace (stakater: reloader.namespaceSelector, reloader.ignoreNamespaces)" -}}
{{- end -}}
{{- include "reloader.validateSwitch" . -}}
{{- /* values.schema.json checks each value alone (reloadStrategy, logFormat, ...). */ -}}
{{- end -}}


{{/*
helm upgrade over a release whose Deployment selects by app and release (stakater's layout)
must keep that Deployment: its selector cannot change, and a new name would delete it. Rendering
fails, before anything changes, naming the value to add.
*/}}
{{- define "reloader.validateSwitch" -}}
{{- $prev := include "reloader.previous" . | fromJson -}}
{{- if $prev -}}
{{- $what := printf "release %s runs Deployment %s, which selects its pods by app and release as stakater Reloader's chart does; helm cannot change that selector" .Release.Name $prev.name -}}
{{- if not (include "reloader.stakaterLayout" .) -}}
{{- fail (printf "%s: add --set stakaterLabels=true to switch it in place" $what) -}}
{{- end -}}
{{- $name := include "reloader.fullname" . -}}
{{- if ne $name $prev.name -}}
{{- fail (printf "%s, and this chart would name it %s: add --set fullnameOverride=%s to switch it in place" $what $name $prev.name) -}}
{{- end -}}
{{- $sel := include "reloader.selectorLabels" . | fromYaml -}}
{{- if ne (toJson $sel) (toJson $prev.selector) -}}
{{- fail (printf "%s, and this chart would select %s instead of %s: add --set reloader.matchLabels.<key>=<value> for each label beyond app and release" $what (toJson $sel) (toJson $prev.selector)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
