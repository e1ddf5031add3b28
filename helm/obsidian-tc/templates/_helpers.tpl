{{/* The release's base name for every object: <release>-obsidian-tc, or fullnameOverride; at most
40 characters, so "<base>-gateway-metrics" (a Service) and "<base>-migrate-<revision>" fit in 63. */}}
{{- define "otc.name" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-obsidian-tc" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "otc.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: obsidian-tc
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ include "otc.tag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: obsidian-tc
{{- end -}}

{{/* Selector labels of one component: pass (dict "ctx" $ "component" "gateway"). */}}
{{- define "otc.selectorLabels" -}}
app.kubernetes.io/name: obsidian-tc
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Every label of one component's objects and pods. */}}
{{- define "otc.componentLabels" -}}
{{ include "otc.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "otc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "otc.name" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The image tag: image.tag, else the chart's appVersion (never empty, never latest). */}}
{{- define "otc.tag" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag | toString -}}
{{- if or (eq $tag "") (eq $tag "latest") -}}
{{- fail "image.tag must name a release (not empty, not latest)" -}}
{{- end -}}
{{- $tag -}}
{{- end -}}

{{/* The port number at the end of a listen address ("0.0.0.0:8080" -> 8080). */}}
{{- define "otc.port" -}}
{{- $port := regexFind "[0-9]+$" (toString .) -}}
{{- if not $port -}}{{- fail (printf "%q is not a host:port listen address" .) -}}{{- end -}}
{{- $port -}}
{{- end -}}

{{- define "otc.httpPort" -}}{{ include "otc.port" .Values.config.server.listen }}{{- end -}}
{{- define "otc.adminPort" -}}{{ include "otc.port" .Values.config.server.admin_listen }}{{- end -}}

{{/* The per-item secretKeyRef values and the variable each one sets. */}}
{{- define "otc.secretEnvNames" -}}
databaseUrl: OTC__DATABASE__URL
databaseMigrateUrl: OTC__DATABASE__MIGRATE_URL
redisUrl: OTC__REDIS__URL
objectStoreAccessKeyId: OTC__OBJECT_STORE__ACCESS_KEY_ID
objectStoreSecretAccessKey: OTC__OBJECT_STORE__SECRET_ACCESS_KEY
oauthSecretKey: OTC__OAUTH__SECRET_KEY
embeddingsApiKey: OTC__EMBEDDINGS__API_KEY
{{- end -}}

{{/* Refuses a release whose database and Redis URLs come from no Secret at all. */}}
{{- define "otc.checkSecrets" -}}
{{- $refs := .Values.secretRefs | default dict -}}
{{- if not (or .Values.existingSecret (and $refs.databaseUrl $refs.redisUrl)) -}}
{{- fail "secrets: set existingSecret (a Secret with OTC__DATABASE__URL, OTC__REDIS__URL, ...) or secretRefs.databaseUrl and secretRefs.redisUrl; secrets are never given inline" -}}
{{- end -}}
{{- end -}}

{{/*
The container fields every obsidian-tc container shares (image, command, configuration,
secrets, security, mounts). The role goes in `args`, set by each template.
*/}}
{{- define "otc.container" -}}
{{- include "otc.checkSecrets" . -}}
image: "{{ .Values.image.repository }}:{{ include "otc.tag" . }}"
imagePullPolicy: {{ .Values.image.pullPolicy }}
command: ["/usr/local/bin/obsidian-tc"]
env:
  - name: OTC_CONFIG
    value: /etc/obsidian-tc/obsidian-tc.toml
  # The in-process caches take their shares of this container's memory limit.
  - name: OTC__CACHES__MEMORY_LIMIT_BYTES
    valueFrom:
      resourceFieldRef:
        resource: limits.memory
{{- $refs := .Values.secretRefs | default dict }}
{{- $names := include "otc.secretEnvNames" . | fromYaml }}
{{- range $item := keys $names | sortAlpha }}
{{- with get $refs $item }}
  - name: {{ get $names $item }}
    valueFrom:
      secretKeyRef:
        name: {{ .name }}
        key: {{ .key }}
        {{- if hasKey . "optional" }}
        optional: {{ .optional }}
        {{- end }}
{{- end }}
{{- end }}
{{- with .Values.extraEnv }}
{{- toYaml . | nindent 2 }}
{{- end }}
{{- if .Values.existingSecret }}
envFrom:
  - secretRef:
      name: {{ .Values.existingSecret }}
{{- end }}
securityContext: {{- toYaml .Values.securityContext | nindent 2 }}
volumeMounts:
  - name: config
    mountPath: /etc/obsidian-tc
    readOnly: true
  - name: tmp
    mountPath: /tmp
{{- with .Values.extraVolumeMounts }}
{{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The pod volumes; pass (dict "ctx" $ "configMap" NAME). */}}
{{- define "otc.volumes" -}}
- name: config
  configMap:
    name: {{ .configMap }}
- name: tmp
  emptyDir:
    sizeLimit: {{ .ctx.Values.tmpSizeLimit }}
{{- with .ctx.Values.extraVolumes }}
{{- toYaml . | nindent 0 }}
{{- end }}
{{- end -}}

{{/* Pod-level fields every obsidian-tc pod shares. */}}
{{- define "otc.podSpec" -}}
automountServiceAccountToken: false
securityContext: {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
Spread a component's pods over zones and nodes; pass (dict "ctx" $ "component" NAME).
*/}}
{{- define "otc.topologySpread" -}}
{{- if .ctx.Values.topologySpread.enabled -}}
topologySpreadConstraints:
{{- range $key := list "topology.kubernetes.io/zone" "kubernetes.io/hostname" }}
  - maxSkew: {{ $.ctx.Values.topologySpread.maxSkew }}
    topologyKey: {{ $key }}
    whenUnsatisfiable: {{ $.ctx.Values.topologySpread.whenUnsatisfiable }}
    labelSelector:
      matchLabels: {{- include "otc.selectorLabels" $ | nindent 8 }}
    matchLabelKeys: ["pod-template-hash"]
{{- end }}
{{- end }}
{{- end -}}

{{/* ------------------------------------------------------------------------------------
The configuration file: .Values.config rendered as TOML. Tables nest ([a.b]), lists of tables
become arrays of tables ([[acl]]), other lists inline arrays, maps inside lists inline tables.
Strings are written as TOML basic strings (JSON escapes are TOML escapes); whole numbers as
integers (Helm reads YAML numbers as float64, so 10737418240 must not come out as 1.07e+10),
fractions as floats; a key set to null is left out, so the binary's default applies.
------------------------------------------------------------------------------------- */}}
{{- define "otc.toml.key" -}}
{{- if regexMatch "^[A-Za-z0-9_-]+$" . -}}{{ . }}{{- else -}}{{ toJson . }}{{- end -}}
{{- end -}}

{{- define "otc.toml.value" -}}
{{- $v := . -}}
{{- if kindIs "string" $v -}}{{ toJson $v }}
{{- else if kindIs "bool" $v -}}{{ $v }}
{{- else if or (kindIs "float64" $v) (kindIs "float32" $v) -}}
{{- if eq (float64 $v) (floor $v) -}}{{ printf "%.0f" (float64 $v) }}{{- else -}}{{ $v }}{{- end -}}
{{- else if or (kindIs "int" $v) (kindIs "int64" $v) (kindIs "int32" $v) (kindIs "uint64" $v) -}}{{ $v }}
{{- else if kindIs "slice" $v -}}
[{{ range $i, $e := $v }}{{ if $i }}, {{ end }}{{ include "otc.toml.value" $e }}{{ end }}]
{{- else if kindIs "map" $v -}}
{ {{- $first := true -}}
{{- range $k := keys $v | sortAlpha -}}
{{- $e := get $v $k -}}
{{- if not (kindIs "invalid" $e) -}}
{{- if not $first }}, {{ end }}{{ $first = false }}{{ include "otc.toml.key" $k }} = {{ include "otc.toml.value" $e }}
{{- end -}}
{{- end -}} }
{{- else -}}
{{- fail (printf "config: %v cannot be written as TOML" $v) -}}
{{- end -}}
{{- end -}}

{{/* True when a value is a non-empty list of maps (a TOML array of tables). */}}
{{- define "otc.toml.isTableArray" -}}
{{- if and (kindIs "slice" .) (gt (len .) 0) -}}
{{- $all := true -}}
{{- range . }}{{ if not (kindIs "map" .) }}{{ $all = false }}{{ end }}{{ end -}}
{{- if $all }}true{{ end -}}
{{- end -}}
{{- end -}}

{{/* One table; pass (dict "path" LIST "table" MAP "array" BOOL). */}}
{{- define "otc.toml.table" -}}
{{- $path := .path -}}
{{- $t := .table -}}
{{- $quoted := list -}}
{{- range $path }}{{ $quoted = append $quoted (include "otc.toml.key" .) }}{{ end -}}
{{- $name := join "." $quoted -}}
{{- /* A table that holds only tables gets no header of its own ([a.b] implies [a]). */ -}}
{{- $scalars := false -}}
{{- range $k, $v := $t }}{{ if not (or (kindIs "invalid" $v) (kindIs "map" $v) (include "otc.toml.isTableArray" $v)) }}{{ $scalars = true }}{{ end }}{{ end -}}
{{- if and $path (or .array $scalars (eq (len $t) 0)) }}
{{ if .array }}[[{{ $name }}]]{{ else }}[{{ $name }}]{{ end }}
{{- end }}
{{- range $k := keys $t | sortAlpha }}
{{- $v := get $t $k }}
{{- if not (or (kindIs "invalid" $v) (kindIs "map" $v) (include "otc.toml.isTableArray" $v)) }}
{{ include "otc.toml.key" $k }} = {{ include "otc.toml.value" $v }}
{{- end }}
{{- end }}
{{- range $k := keys $t | sortAlpha }}
{{- $v := get $t $k }}
{{- if kindIs "map" $v }}
{{ include "otc.toml.table" (dict "path" (append $path $k) "table" $v "array" false) }}
{{- else if include "otc.toml.isTableArray" $v }}
{{- range $v }}
{{ include "otc.toml.table" (dict "path" (append $path $k) "table" . "array" true) }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "otc.toml" -}}
# Rendered by the obsidian-tc Helm chart from .Values.config; secrets come from the environment.
{{- include "otc.toml.table" (dict "path" list "table" .Values.config "array" false) }}
{{- end -}}

{{/* The ConfigMap body shared by the release's ConfigMap and the migration hook's copy. */}}
{{- define "otc.configData" -}}
obsidian-tc.toml: |
{{- include "otc.toml" . | nindent 2 }}
{{- end -}}

{{/* PgBouncer's pgbouncer.ini (values: pgbouncer); the pods' URL names its Service. */}}
{{- define "otc.pgbouncerIni" -}}
{{- with .Values.pgbouncer -}}
[databases]
* = host={{ .upstream.host }} port={{ .upstream.port }}

[pgbouncer]
listen_addr = 0.0.0.0
listen_port = {{ .port }}
unix_socket_dir =
pool_mode = transaction
auth_type = scram-sha-256
auth_file = /etc/pgbouncer-auth/userlist.txt
default_pool_size = {{ .poolSize }}
reserve_pool_size = {{ .reservePoolSize }}
reserve_pool_timeout = {{ .reservePoolTimeoutSeconds }}
max_client_conn = {{ .maxClientConn }}
ignore_startup_parameters = extra_float_digits
server_tls_sslmode = {{ .upstream.sslmode }}
{{- if .upstream.caSecret }}
server_tls_ca_file = /etc/pgbouncer-ca/ca.crt
{{- end }}
{{- range $name := keys .extraSettings | sortAlpha }}
{{ $name }} = {{ get $.Values.pgbouncer.extraSettings $name }}
{{- end }}
{{- end }}
{{- end -}}
