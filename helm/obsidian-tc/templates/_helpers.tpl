{{- define "otc.name" -}}{{ .Release.Name }}-obsidian-tc{{- end -}}

{{- define "otc.labels" -}}
app.kubernetes.io/name: obsidian-tc
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* The fields every obsidian-tc container shares; the role is set by `args`. */}}
{{- define "otc.container" -}}
image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
imagePullPolicy: {{ .Values.image.pullPolicy }}
env:
  - name: OTC_CONFIG
    value: /etc/obsidian-tc/obsidian-tc.toml
envFrom:
  - secretRef:
      name: {{ .Values.existingSecret }}
volumeMounts:
  - name: config
    mountPath: /etc/obsidian-tc
    readOnly: true
{{- end -}}

{{- define "otc.volumes" -}}
- name: config
  configMap:
    name: {{ include "otc.name" . }}
{{- end -}}
