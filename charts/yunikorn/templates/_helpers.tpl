{{/* Chart name and version, as in the helm.sh/chart label. */}}
{{- define "yunikorn.chart" -}}
{{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels every object carries. */}}
{{- define "yunikorn.labels" -}}
app: yunikorn
app.kubernetes.io/name: yunikorn
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "yunikorn.chart" . }}
{{- end }}

{{/* Pod selector of one component; call with (dict "root" $ "component" "yunikorn-scheduler"). */}}
{{- define "yunikorn.selector" -}}
app: yunikorn
component: {{ .component }}
release: {{ .root.Release.Name }}
{{- end }}

{{/* The image both deployments run. */}}
{{- define "yunikorn.image" -}}
{{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* NAMESPACE from the downward API: where the scheduler and the controller find their configmaps. */}}
{{- define "yunikorn.namespaceEnv" -}}
- name: NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end }}

{{/* The scheduler's replicas: scheduler.replicaCount, else 2 with leader election and 1 without; more
than one without leader election fails (two schedulers would bind the same pods). */}}
{{- define "yunikorn.schedulerReplicas" -}}
{{- $sched := .Values.scheduler }}
{{- $replicas := $sched.replicaCount | default (ternary 2 1 $sched.leaderElection.enabled) | int }}
{{- if and (gt $replicas 1) (not $sched.leaderElection.enabled) }}
{{- fail "scheduler.replicaCount above 1 needs scheduler.leaderElection.enabled: two schedulers without it would bind the same pods" }}
{{- end }}
{{- $replicas }}
{{- end }}
