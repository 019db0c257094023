{{- define "kafka-gateway.name" -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}-kafka-gateway
{{- end -}}

{{- define "kafka-gateway.labels" -}}
app.kubernetes.io/name: kafka-gateway
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{- define "kafka-gateway.selector" -}}
app.kubernetes.io/name: kafka-gateway
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
