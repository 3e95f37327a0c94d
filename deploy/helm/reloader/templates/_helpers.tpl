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
{{- else -}}
{{- $name := include "reloader.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "reloader.selectorLabels" -}}
app.kubernetes.io/name: {{ include "reloader.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "reloader.labels" -}}
{{ include "reloader.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "reloader.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "reloader.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The state ConfigMap and its shards: <name>, <name>-1 ... <name>-7 (state.MaxShards = 8). */}}
{{- define "reloader.stateShards" -}}
{{- $names := list .Values.stateConfigMap -}}
{{- range $i := untilStep 1 8 1 -}}
{{- $names = append $names (printf "%s-%d" $.Values.stateConfigMap $i) -}}
{{- end -}}
{{- toJson $names -}}
{{- end -}}

{{/*
Rules for reading configs and restarting workloads; they go into the Role or, with
watchGlobally, the ClusterRole.
*/}}
{{- define "reloader.watchRules" -}}
- apiGroups: [""]
  resources: [configmaps, secrets]
  verbs: [get, list, watch]
{{- if .Values.watchGlobally }}
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
{{- if .Values.isArgoRollouts }}
- apiGroups: [argoproj.io]
  resources: [rollouts]
  verbs: [get, list, watch, patch]
{{- end }}
{{- if .Values.isOpenshift }}
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
{{- if .Values.leaderElection.enabled }}
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
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) -}}
{{- fail (printf "replicaCount=%d needs leaderElection.enabled=true: without leader election every replica restarts workloads and writes the state" (int .Values.replicaCount)) -}}
{{- end -}}
{{- if and .Values.namespaces .Values.watchGlobally -}}
{{- fail "namespaces lists the namespaces to watch: it needs watchGlobally=false" -}}
{{- end -}}
{{- if and (or .Values.namespaceSelector .Values.namespacesToIgnore) (not .Values.watchGlobally) -}}
{{- fail "namespaceSelector and namespacesToIgnore need watchGlobally=true: a namespace-scoped reloader watches only its own namespace" -}}
{{- end -}}
{{- if not (has .Values.reloadStrategy (list "env-vars" "annotations")) -}}
{{- fail (printf "reloadStrategy must be env-vars or annotations, got %q" .Values.reloadStrategy) -}}
{{- end -}}
{{- if not (has .Values.logFormat (list "text" "json")) -}}
{{- fail (printf "logFormat must be text or json, got %q" .Values.logFormat) -}}
{{- end -}}
{{- end -}}
