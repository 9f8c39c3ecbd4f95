{{/*
NetworkPolicies: one per component, each selecting that component's pods and allowing only what
it needs. Listing both policy types makes everything else refused, in and out. Ports are the ones
the pods listen on: policies see traffic after a Service has translated its port.
*/}}

{{/* The port OTLP traces go to: networkPolicy.egress.otlp.port, else otel.endpoint's. */}}
{{- define "linkservice.networkPolicy.otlpPort" -}}
{{- $otlp := .Values.networkPolicy.egress.otlp -}}
{{- if $otlp.port -}}
{{- $otlp.port -}}
{{- else -}}
{{- $endpoint := urlParse (required "otel.endpoint is required when otel.enabled is true" .Values.otel.endpoint) -}}
{{- $port := regexFind "[0-9]+$" (regexFind ":[0-9]+$" $endpoint.host) -}}
{{- if $port -}}
{{- $port -}}
{{- else if eq $endpoint.scheme "https" -}}
443
{{- else -}}
80
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
An egress rule to TCP ports of the given peers, or of anything when there are none.
(dict "port" 5432 "extraPorts" list "to" list)
*/}}
{{- define "linkservice.networkPolicy.tcpEgress" -}}
- ports:
    {{- range (prepend (.extraPorts | default list) .port) }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
  {{- with .to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* Name lookups: every pod resolves the Service and host names in its URLs. */}}
{{- define "linkservice.networkPolicy.dnsEgress" -}}
{{- $dns := .Values.networkPolicy.dns -}}
- ports:
    - port: {{ $dns.port }}
      protocol: UDP
    - port: {{ $dns.port }}
      protocol: TCP
  {{- with $dns.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/*
Egress of the linkservice processes: DNS, Postgres, then Redis and the OTLP collector unless
"databaseOnly" (the migration only talks to Postgres), then networkPolicy.extraEgress.
*/}}
{{- define "linkservice.networkPolicy.appEgress" -}}
{{- $ := .context -}}
{{- $egress := $.Values.networkPolicy.egress -}}
{{- include "linkservice.networkPolicy.dnsEgress" $ }}
{{ include "linkservice.networkPolicy.tcpEgress" (dict "port" $egress.postgres.port "extraPorts" $egress.postgres.extraPorts "to" $egress.postgres.to) }}
{{- if not .databaseOnly }}
{{ include "linkservice.networkPolicy.tcpEgress" (dict "port" $egress.redis.port "extraPorts" $egress.redis.extraPorts "to" $egress.redis.to) }}
{{- if $.Values.otel.enabled }}
{{ include "linkservice.networkPolicy.tcpEgress" (dict "port" (include "linkservice.networkPolicy.otlpPort" $) "to" $egress.otlp.to) }}
{{- end }}
{{- end }}
{{- with $.Values.networkPolicy.extraEgress }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
The worker's webhook deliveries: any TCP port (receivers listen where they like) of public
addresses, that is 0.0.0.0/0 and ::/0 less the private (RFC 1918, fc00::/7), shared (CGNAT) and
link-local (metadata endpoints among them) ranges, plus the private ranges webhooks.allowedCidrs
lets deliveries reach. Defence in depth beside the worker's own check of every address it
connects to: a pod that gets past that check still cannot reach the cluster's insides.
*/}}
{{- define "linkservice.networkPolicy.webhookEgress" -}}
{{- $allowed := include "linkservice.commaList" .Values.webhooks.allowedCidrs -}}
- ports:
    - protocol: TCP
  to:
    - ipBlock:
        cidr: 0.0.0.0/0
        except:
          - 10.0.0.0/8
          - 100.64.0.0/10
          - 169.254.0.0/16
          - 172.16.0.0/12
          - 192.168.0.0/16
    - ipBlock:
        cidr: ::/0
        except:
          - fc00::/7
          - fe80::/10
    {{- if $allowed }}
    {{- range (splitList "," $allowed) }}
    - ipBlock:
        cidr: {{ . }}
    {{- end }}
    {{- end }}
{{- end -}}

{{/*
Ingress to an HTTP service's port: from networkPolicy.ingressFrom, or from anywhere when it is
empty. The `helm test` pod is added to the peers, so it reaches /readyz either way.
*/}}
{{- define "linkservice.networkPolicy.httpIngress" -}}
{{- $ := .context -}}
- ports:
    - port: {{ .port }}
      protocol: TCP
  {{- with $.Values.networkPolicy.ingressFrom }}
  from:
    {{- toYaml . | nindent 4 }}
    {{- if $.Values.tests.enabled }}
    - podSelector:
        matchLabels:
          {{- include "linkservice.componentSelectorLabels" (dict "context" $ "component" "test") | nindent 10 }}
    {{- end }}
  {{- end }}
{{- end -}}

{{/*
Ingress to a component's metrics port: from networkPolicy.metricsFrom (Prometheus), or from
anywhere when it is empty. (dict "context" $ "component" "worker")
*/}}
{{- define "linkservice.networkPolicy.metricsIngress" -}}
{{- $ := .context -}}
- ports:
    - port: {{ (index $.Values .component).metrics.port }}
      protocol: TCP
  {{- with $.Values.networkPolicy.metricsFrom }}
  from:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/*
A component's NetworkPolicy. (dict "context" $ "component" "gateway" "ingress" <rules YAML>
"egress" <rules YAML> "annotations" dict); no "ingress" refuses all incoming traffic.
*/}}
{{- define "linkservice.networkPolicy" -}}
{{- $ := .context -}}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "linkservice.componentFullname" . }}
  namespace: {{ $.Release.Namespace | quote }}
  labels:
    {{- include "linkservice.componentLabels" . | nindent 4 }}
  {{- with (include "linkservice.annotations" (dict "context" $ "annotations" .annotations)) }}
  {{- . | nindent 2 }}
  {{- end }}
spec:
  podSelector:
    matchLabels:
      {{- include "linkservice.componentSelectorLabels" . | nindent 6 }}
  policyTypes:
    - Ingress
    - Egress
  {{- with .ingress }}
  ingress:
    {{- . | nindent 4 }}
  {{- end }}
  egress:
    {{- .egress | nindent 4 }}
{{- end -}}
