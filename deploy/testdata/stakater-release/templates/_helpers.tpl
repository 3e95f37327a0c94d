{{- define "stakater.fullname" -}}
{{- .Values.fullnameOverride | default (printf "%s-%s" .Release.Name .Chart.Name) -}}
{{- end -}}

{{- define "stakater.matchLabels" -}}
app: {{ include "stakater.fullname" . }}
release: {{ .Release.Name | quote }}
{{- end -}}
