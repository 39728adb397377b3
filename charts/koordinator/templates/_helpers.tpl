{{/*
Shared snippets. Upstream's nameOverride/fullnameOverride/serviceAccount.name helpers are left
out: no upstream manifest calls them.
*/}}

{{/* The image of component values $c: <imageRepositoryHost>/<repository>:<tag>. */}}
{{- define "koordinator.image" -}}
{{- printf "%s/%s:%s" .root.Values.imageRepositoryHost .c.image.repository .c.image.tag -}}
{{- end -}}

{{/*
Pod-level placement shared by every workload: nodeSelector, tolerations, priorityClassName
(each rendered only when set), indented for a pod spec.
*/}}
{{- define "koordinator.podPlacement" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- end -}}

{{/*
The webhook Service's spec. On `helm upgrade` the live Service's immutable fields are carried
over (lookup returns nothing under `helm template`).
*/}}
{{- define "koordinator.webhookServiceSpec" -}}
{{- $service := lookup "v1" "Service" .Values.installation.namespace "koordinator-webhook-service" -}}
{{- with $service.spec }}
{{- with .clusterIP }}
clusterIP: {{ . }}
{{- end }}
{{- with .clusterIPs }}
clusterIPs:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .ipFamilyPolicy }}
ipFamilyPolicy: {{ . }}
{{- end }}
{{- with .ipFamilies }}
ipFamilies:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
ports:
- port: 443
  targetPort: {{ .Values.manager.webhook.port }}
selector:
  koord-app: koord-manager
{{- end -}}

{{/*
The webhook Secret's data: koord-manager writes its certificates there, so `helm upgrade` keeps
the live data instead of emptying it.
*/}}
{{- define "koordinator.webhookSecretData" -}}
{{- $secret := lookup "v1" "Secret" .Values.installation.namespace "koordinator-webhook-certs" -}}
{{- with $secret.data }}
data:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
The clientConfig of a koord-manager webhook at path $path. caBundle is a placeholder that
koord-manager replaces with its CA.
*/}}
{{- define "koordinator.webhookClientConfig" -}}
clientConfig:
  caBundle: Cg==
  service:
    name: koordinator-webhook-service
    namespace: {{ .root.Values.installation.namespace }}
    path: {{ .path }}
{{- end -}}

{{/*
pluginConfig entries: the chart's args per plugin ($defaults, name -> args, in $order) deep-merged
with the user's ($overrides); plugins only the user names follow, sorted.
*/}}
{{- define "koordinator.pluginConfig" -}}
{{- $merged := mergeOverwrite (deepCopy .defaults) (deepCopy .overrides) -}}
{{- $names := .order -}}
{{- range $name := keys .overrides | sortAlpha }}
{{- if not (has $name $names) }}
{{- $names = append $names $name }}
{{- end }}
{{- end }}
{{- range $name := $names }}
- name: {{ $name }}
  args:
    {{- toYaml (get $merged $name) | nindent 4 }}
{{- end }}
{{- end -}}
