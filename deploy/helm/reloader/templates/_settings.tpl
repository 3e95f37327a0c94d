{{/*
The chart reads two layouts of values: its own (top-level keys) and stakater Reloader's chart's
(everything under reloader:, plus global.* and image.*). "reloader.settings" folds both into one
dict with this chart's names; templates read what both layouts can set from that dict, and only
this chart's own settings (port, stateConfigMap, prometheusRule, ...) from .Values.
A stakater value that is given wins over this chart's own key for the same thing; each
value left out takes its layout's default. Returned as JSON (named templates return strings):
  $s := include "reloader.settings" . | fromJson
*/}}
{{- define "reloader.settings" -}}
{{- if not (hasKey .Values "stateConfigMap") -}}
{{- fail "the values lack this chart's defaults: helm upgrade --reuse-values keeps the previous chart's defaults (stakater's) in their place; use --reset-then-reuse-values instead, which keeps your values over this chart's defaults" -}}
{{- end -}}
{{- $v := .Values -}}
{{- $r := $v.reloader | default dict -}}
{{- $d := $r.deployment | default dict -}}
{{- include "reloader.unsupported" $r -}}
{{- $s := dict -}}
{{- /* stakater's chart watches every namespace unless told otherwise; this one only its own. */ -}}
{{- $global := not (empty $r) -}}
{{- if kindIs "bool" $v.watchGlobally }}{{ $global = $v.watchGlobally }}{{ end -}}
{{- if kindIs "bool" $r.watchGlobally }}{{ $global = $r.watchGlobally }}{{ end -}}
{{- /* Given no scope at all, helm upgrade keeps the scope of the release's live objects. */ -}}
{{- if not (or $r (kindIs "bool" $v.watchGlobally) $v.namespaces) -}}
{{- with include "reloader.previous" . | fromJson }}{{ $global = .clusterWide }}{{ end -}}
{{- end -}}
{{- $_ := set $s "watchGlobally" $global -}}
{{- $_ = set $s "namespaces" (include "reloader.namespaces" . | fromJsonArray) -}}
{{- $le := $v.leaderElection.enabled -}}
{{- if kindIs "bool" $r.enableHA }}{{ $le = $r.enableHA }}{{ end -}}
{{- $_ = set $s "leaderElect" $le -}}
{{- $replicas := int $v.replicaCount -}}
{{- if hasKey $d "replicas" -}}
{{- /* stakater's chart runs one replica unless enableHA is true. */ -}}
{{- $replicas = ternary (int $d.replicas) (min (int $d.replicas) 1 | int) $le -}}
{{- end -}}
{{- $_ = set $s "replicas" $replicas -}}
{{- $strategy := $v.reloadStrategy -}}
{{- with $r.reloadStrategy }}{{ $strategy = . }}{{ end -}}
{{- $_ = set $s "reloadStrategy" (ternary "env-vars" $strategy (eq $strategy "default")) -}}
{{- $format := $v.logFormat -}}
{{- if hasKey $r "logFormat" }}{{ $format = $r.logFormat | default "text" }}{{ end -}}
{{- $_ = set $s "logFormat" $format -}}
{{- $_ = set $s "logLevel" ($r.logLevel | default $v.logLevel) -}}
{{- range $ours, $theirs := dict "isArgoRollouts" "isArgoRollouts" "isOpenshift" "isOpenshift" -}}
{{- $_ = set $s $ours (ternary (index $r $theirs) (index $v $ours) (kindIs "bool" (index $r $theirs))) -}}
{{- end -}}
{{- range $ours, $theirs := dict "namespaceSelector" "namespaceSelector" "resourceLabelSelector" "resourceLabelSelector" "namespacesToIgnore" "ignoreNamespaces" -}}
{{- $_ = set $s $ours ((index $r $theirs) | default (index $v $ours)) -}}
{{- end -}}
{{- if and $r.ignoreSecrets $r.ignoreConfigMaps -}}
{{- fail "reloader.ignoreSecrets and reloader.ignoreConfigMaps: only one of them may be true (with both, nothing would be watched)" -}}
{{- end -}}
{{- $_ = set $s "resourcesToIgnore" (ternary "secrets" (ternary "configmaps" "" (eq $r.ignoreConfigMaps true)) (eq $r.ignoreSecrets true)) -}}
{{- $ignored := list -}}
{{- if $r.ignoreJobs }}{{ $ignored = append $ignored "jobs" }}{{ end -}}
{{- if $r.ignoreCronJobs }}{{ $ignored = append $ignored "cronjobs" }}{{ end -}}
{{- $_ = set $s "ignoredWorkloadTypes" $ignored -}}
{{- range $k := list "autoReloadAll" "reloadOnCreate" "reloadOnDelete" "syncAfterRestart" "enableMetricsByNamespace" -}}
{{- $_ = set $s $k (eq (index $r $k) true) -}}
{{- end -}}
{{- $_ = set $s "enablePprof" (eq $r.enablePProf true) -}}
{{- $_ = set $s "pprofAddr" ($r.pprofAddr | default ":6060") -}}
{{- $_ = set $s "webhookUrl" ($r.webhookUrl | default "") -}}
{{- $_ = set $s "annotationFlags" (include "reloader.annotationFlags" $r | fromJsonArray) -}}
{{- include "reloader.podSettings" (dict "s" $s "v" $v "d" $d) -}}
{{- if $r.readOnlyRootFileSystem -}}
{{- $_ = set $s "securityContext" (merge (dict "readOnlyRootFilesystem" true) $s.securityContext) -}}
{{- end -}}
{{- include "reloader.objectSettings" (dict "s" $s "v" $v "r" $r) -}}
{{- $_ = set $s "image" (include "reloader.image" .) -}}
{{- $_ = set $s "env" (include "reloader.env" . | fromJsonArray) -}}
{{- $_ = set $s "envSecret" (($d.env | default dict).secret | default dict) -}}
{{- toJson $s -}}
{{- end -}}

{{/* stakater values this chart refuses, each with the reason. */}}
{{- define "reloader.unsupported" -}}
{{- if .enableCSIIntegration -}}
{{- fail "reloader.enableCSIIntegration: not supported: the reloader does not watch the Secrets Store CSI driver; let the driver sync the secret into a Kubernetes Secret (secretObjects) and reload on that" -}}
{{- end -}}
{{- if (.legacy | default dict).rbac -}}
{{- fail "reloader.legacy.rbac: not supported: the chart makes only rbac.authorization.k8s.io/v1 Roles" -}}
{{- end -}}
{{- if (.verticalPodAutoscaler | default dict).enabled -}}
{{- fail "reloader.verticalPodAutoscaler.enabled: not supported: the chart makes no VerticalPodAutoscaler; set reloader.deployment.resources" -}}
{{- end -}}
{{- end -}}

{{/*
Namespaces to watch exactly (--namespaces): this chart's list, or stakater's reloader.namespaces
(a list or a comma-separated string) with the release namespace added, as stakater's chart adds
it. JSON list.
*/}}
{{- define "reloader.namespaces" -}}
{{- $ns := .Values.namespaces | default list -}}
{{- with (.Values.reloader | default dict).namespaces -}}
{{- $given := kindIs "string" . | ternary (splitList "," (toString .)) . -}}
{{- $ns = list $.Release.Namespace -}}
{{- range $given }}{{ with trim (toString .) }}{{ $ns = append $ns . }}{{ end }}{{ end -}}
{{- $ns = $ns | uniq | sortAlpha -}}
{{- end -}}
{{- toJson $ns -}}
{{- end -}}

{{/* stakater's reloader.custom_annotations, as the flags that rename each annotation. JSON list. */}}
{{- define "reloader.annotationFlags" -}}
{{- $flags := dict "configmap" "configmap-annotation" "secret" "secret-annotation" "auto" "auto-annotation"
  "secret_auto" "secret-auto-annotation" "configmap_auto" "configmap-auto-annotation"
  "search" "auto-search-annotation" "match" "search-match-annotation" "ignore" "ignore-annotation"
  "pausePeriod" "pause-deployment-annotation" "pauseTime" "pause-deployment-time-annotation" -}}
{{- $out := list -}}
{{- range $key, $value := .custom_annotations | default dict -}}
{{- $out = append $out (printf "--%s=%s" (index $flags $key) $value) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
Pod settings: this chart's key, unless stakater's reloader.deployment.<key> is given (an empty
map or list there keeps this chart's value, as stakater's values.yaml lists them empty).
*/}}
{{- define "reloader.podSettings" -}}
{{- $s := .s }}{{ $v := .v }}{{ $d := .d -}}
{{- $pairs := dict "resources" "resources" "podSecurityContext" "securityContext" "securityContext" "containerSecurityContext"
  "nodeSelector" "nodeSelector" "tolerations" "tolerations" "affinity" "affinity"
  "topologySpreadConstraints" "topologySpreadConstraints" "priorityClassName" "priorityClassName"
  "runtimeClassName" "runtimeClassName" "schedulerName" "schedulerName" "dnsConfig" "dnsConfig"
  "volumes" "volumes" "volumeMounts" "volumeMounts" "revisionHistoryLimit" "revisionHistoryLimit" -}}
{{- range $ours, $theirs := $pairs -}}
{{- $value := index $v $ours -}}
{{- $given := index $d $theirs -}}
{{- if or (not (empty $given)) (kindIs "float64" $given) (kindIs "int64" $given) }}{{ $value = $given }}{{ end -}}
{{- $_ := set $s $ours $value -}}
{{- end -}}
{{- $_ := set $s "hostUsers" $d.hostUsers -}}
{{- if hasKey $d "automountServiceAccountToken" }}{{ $_ = set $s "automountServiceAccountToken" $d.automountServiceAccountToken }}{{ end -}}
{{- $_ = set $s "podAnnotations" (merge (deepCopy (($d.pod | default dict).annotations | default dict)) $v.podAnnotations) -}}
{{- $_ = set $s "podLabels" (merge (deepCopy ($d.labels | default dict)) $v.podLabels) -}}
{{- $_ = set $s "deploymentLabels" ($d.labels | default dict) -}}
{{- $_ = set $s "deploymentAnnotations" ($d.annotations | default dict) -}}
{{- range $probe := list "livenessProbe" "readinessProbe" -}}
{{- $_ = set $s $probe (merge (deepCopy (index $d $probe | default dict)) (index $v $probe)) -}}
{{- end -}}
{{- end -}}

{{/*
Settings of the other objects: this chart's keys, with stakater's reloader.<key> merged over
them (its given fields win).
*/}}
{{- define "reloader.objectSettings" -}}
{{- $s := .s }}{{ $v := .v }}{{ $r := .r -}}
{{- $sa := deepCopy $v.serviceAccount -}}
{{- with $r.serviceAccount -}}
{{- $sa = mergeOverwrite $sa (omit . "name") -}}
{{- /* stakater's chart runs as the namespace's default ServiceAccount when it creates none. */ -}}
{{- $_ := set $sa "name" (.name | default $sa.name | default (ternary "" "default" ($sa.create | default false))) -}}
{{- end -}}
{{- $_ := set $s "serviceAccount" $sa -}}
{{- $_ = set $s "rbac" (mergeOverwrite (deepCopy $v.rbac) ($r.rbac | default dict)) -}}
{{- $svc := deepCopy $v.service -}}
{{- $_ = set $svc "port" $v.port -}}
{{- $_ = set $s "service" (mergeOverwrite $svc ($r.service | default dict)) -}}
{{- $_ = set $s "podDisruptionBudget" (mergeOverwrite (deepCopy $v.podDisruptionBudget) ($r.podDisruptionBudget | default dict)) -}}
{{- $_ = set $s "networkPolicy" (mergeOverwrite (deepCopy $v.networkPolicy) ($r.netpol | default dict)) -}}
{{- range $monitor := list "serviceMonitor" "podMonitor" -}}
{{- $theirs := deepCopy (index $r $monitor | default dict) -}}
{{- /* stakater calls the scrape timeout "timeout". */ -}}
{{- with $theirs.timeout }}{{ $_ = set $theirs "scrapeTimeout" . }}{{ end -}}
{{- $_ = set $s $monitor (mergeOverwrite (deepCopy (index $v $monitor)) (omit $theirs "timeout")) -}}
{{- end -}}
{{- end -}}

{{/*
The image: repository:tag, repository@digest with a digest; with global.imageRegistry,
<registry>/<image.name> replaces the repository. The tag defaults to the chart's appVersion.
*/}}
{{- define "reloader.image" -}}
{{- $img := .Values.image -}}
{{- $repo := $img.repository -}}
{{- with (.Values.global | default dict).imageRegistry }}{{ $repo = printf "%s/%s" (trimSuffix "/" .) $img.name }}{{ end -}}
{{- if contains "stakater/reloader" $repo -}}
{{- fail (printf "image: %s is stakater Reloader's image; this chart runs the reloader's own (image.repository ghcr.io/reloader/reloader, or image.name reloader/reloader with global.imageRegistry)" $repo) -}}
{{- end -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $repo $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo ($img.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/*
The container's environment after POD_NAMESPACE: stakater's reloader.deployment.env (open,
secret, existing, field, in stakater's order), its GOMAXPROCS and GOMEMLIMIT overrides, then
this chart's extraEnv. YAML list.
*/}}
{{- define "reloader.env" -}}
{{- $d := (.Values.reloader | default dict).deployment | default dict -}}
{{- $env := $d.env | default dict -}}
{{- $out := list -}}
{{- range $name, $value := $env.open | default dict -}}
{{- if $value }}{{ $out = append $out (dict "name" $name "value" (toString $value)) }}{{ end -}}
{{- end -}}
{{- $secret := include "reloader.fullname" . -}}
{{- range $name, $value := $env.secret | default dict -}}
{{- if $value }}{{ $out = append $out (dict "name" $name "valueFrom" (dict "secretKeyRef" (dict "name" $secret "key" $name))) }}{{ end -}}
{{- end -}}
{{- range $secretName, $keys := $env.existing | default dict -}}
{{- range $name, $key := $keys -}}
{{- $out = append $out (dict "name" $name "valueFrom" (dict "secretKeyRef" (dict "name" $secretName "key" $key))) -}}
{{- end -}}
{{- end -}}
{{- range $name, $path := $env.field | default dict -}}
{{- if $path }}{{ $out = append $out (dict "name" $name "valueFrom" (dict "fieldRef" (dict "fieldPath" $path))) }}{{ end -}}
{{- end -}}
{{- with $d.gomaxprocsOverride }}{{ $out = append $out (dict "name" "GOMAXPROCS" "value" (toString .)) }}{{ end -}}
{{- with $d.gomemlimitOverride }}{{ $out = append $out (dict "name" "GOMEMLIMIT" "value" (toString .)) }}{{ end -}}
{{- toJson (concat $out (.Values.extraEnv | default list)) -}}
{{- end -}}
