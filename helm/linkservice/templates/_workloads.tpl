{{/*
Resources every component has in the same shape. Called as
  include "linkservice.deployment" (dict "context" $ "component" "gateway" "port" 8080 "portName" "http")
A component's own variables come as "env" (EnvVar list items, YAML) and the checksums of its own
Secrets as "checksums" (annotations, YAML).
*/}}

{{- define "linkservice.deployment" -}}
{{- $ := .context -}}
{{- $values := index $.Values .component -}}
{{- include "linkservice.checkGracePeriod" . -}}
{{- $podLabels := merge (fromYaml (include "linkservice.componentLabels" .)) ($values.podLabels | default dict) -}}
{{- $podAnnotations := merge (fromYaml (include "linkservice.configChecksums" $)) (fromYaml (.checksums | default "")) ($values.podAnnotations | default dict) -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "linkservice.componentFullname" . }}
  namespace: {{ $.Release.Namespace | quote }}
  labels:
    {{- include "linkservice.componentLabels" . | nindent 4 }}
  {{- with (include "linkservice.annotations" (dict "context" $)) }}
  {{- . | nindent 2 }}
  {{- end }}
spec:
  {{- if not $values.autoscaling.enabled }}
  replicas: {{ $values.replicaCount }}
  {{- end }}
  revisionHistoryLimit: 10
  strategy:
    {{- toYaml $values.updateStrategy | nindent 4 }}
  selector:
    matchLabels:
      {{- include "linkservice.componentSelectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- toYaml $podLabels | nindent 8 }}
      annotations:
        {{- toYaml $podAnnotations | nindent 8 }}
    spec:
      serviceAccountName: {{ include "linkservice.serviceAccountName" $ }}
      {{- with (include "linkservice.imagePullSecrets" $) }}
      {{- . | nindent 6 }}
      {{- end }}
      {{- include "linkservice.podSecurity" $ | nindent 6 }}
      terminationGracePeriodSeconds: {{ $values.terminationGracePeriodSeconds }}
      {{- with $values.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      {{- with $values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with (include "linkservice.affinity" .) }}
      affinity:
        {{- . | nindent 8 }}
      {{- end }}
      {{- with $values.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ .component }}
          image: {{ include "linkservice.image" $ }}
          imagePullPolicy: {{ $.Values.image.pullPolicy }}
          args: [{{ .component | quote }}]
          securityContext:
            {{- toYaml $.Values.containerSecurityContext | nindent 12 }}
          ports:
            - name: {{ .portName }}
              containerPort: {{ .port }}
              protocol: TCP
            - name: metrics
              containerPort: {{ $values.metrics.port }}
              protocol: TCP
          envFrom:
            - configMapRef:
                name: {{ include "linkservice.fullname" $ }}
            {{- with (include "linkservice.extraEnvFrom" $) }}
            {{- . | nindent 12 }}
            {{- end }}
          env:
            {{- include "linkservice.secretEnv" (dict "context" $ "secretName" (include "linkservice.secretName" $)) | nindent 12 }}
            {{- with .env }}
            {{- . | nindent 12 }}
            {{- end }}
            - name: SHUTDOWN_GRACE_MS
              value: {{ $values.shutdownGraceMs | int64 | quote }}
            - name: METRICS_PORT
              value: {{ $values.metrics.port | int64 | quote }}
            {{- /* Per component: the gateway's limiters and the redirect's fallback want different bounds. */}}
            {{- if $values.redisCommandTimeoutMs }}
            - name: REDIS_COMMAND_TIMEOUT_MS
              value: {{ $values.redisCommandTimeoutMs | int64 | quote }}
            {{- end }}
            {{- with $.Values.extraEnvVars }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
            {{- with $values.extraEnvVars }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- if $values.startupProbe.enabled }}
          startupProbe:
            {{- include "linkservice.httpProbe" (dict "probe" $values.startupProbe "path" "/healthz" "port" .portName) | nindent 12 }}
          {{- end }}
          {{- if $values.livenessProbe.enabled }}
          livenessProbe:
            {{- include "linkservice.httpProbe" (dict "probe" $values.livenessProbe "path" "/healthz" "port" .portName) | nindent 12 }}
          {{- end }}
          {{- if $values.readinessProbe.enabled }}
          readinessProbe:
            {{- include "linkservice.httpProbe" (dict "probe" $values.readinessProbe "path" "/readyz" "port" .portName) | nindent 12 }}
          {{- end }}
          {{- if $values.preStopSleepSeconds }}
          lifecycle:
            # Keeps serving while endpoints and ingress controllers stop routing to this pod;
            # SIGTERM (and the service's graceful shutdown) follows.
            preStop:
              exec:
                command: ["sleep", {{ $values.preStopSleepSeconds | toString | quote }}]
          {{- end }}
          resources:
            {{- toYaml $values.resources | nindent 12 }}
          {{- include "linkservice.volumeMounts" $ | nindent 10 }}
      {{- include "linkservice.volumes" $ | nindent 6 }}
{{- end -}}

{{- define "linkservice.service" -}}
{{- $ := .context -}}
{{- $service := (index $.Values .component).service -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "linkservice.componentFullname" . }}
  namespace: {{ $.Release.Namespace | quote }}
  labels:
    {{- include "linkservice.componentLabels" . | nindent 4 }}
  {{- with (include "linkservice.annotations" (dict "context" $ "annotations" $service.annotations)) }}
  {{- . | nindent 2 }}
  {{- end }}
spec:
  type: {{ $service.type }}
  selector:
    {{- include "linkservice.componentSelectorLabels" . | nindent 4 }}
  ports:
    - name: http
      port: {{ $service.port }}
      targetPort: http
      protocol: TCP
      {{- if and (has $service.type (list "NodePort" "LoadBalancer")) $service.nodePort }}
      nodePort: {{ $service.nodePort }}
      {{- end }}
{{- end -}}

{{/*
`<fullname>-<component>-metrics`: a ClusterIP Service carrying the component's `metrics` port
alone, what the ServiceMonitor scrapes. Kept apart from the component's HTTP Service so that a
NodePort or LoadBalancer there never publishes /metrics.
*/}}
{{- define "linkservice.metricsService" -}}
{{- $ := .context -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "linkservice.componentFullname" (dict "context" $ "component" (printf "%s-metrics" .component)) }}
  namespace: {{ $.Release.Namespace | quote }}
  labels:
    {{- include "linkservice.componentLabels" . | nindent 4 }}
    {{- include "linkservice.metricsServiceLabel" . | nindent 4 }}
  {{- with (include "linkservice.annotations" (dict "context" $)) }}
  {{- . | nindent 2 }}
  {{- end }}
spec:
  type: ClusterIP
  selector:
    {{- include "linkservice.componentSelectorLabels" . | nindent 4 }}
  ports:
    - name: metrics
      port: {{ (index $.Values .component).metrics.port }}
      targetPort: metrics
      protocol: TCP
{{- end -}}

{{/* The label that tells the metrics Services apart; the ServiceMonitor selects by it. */}}
{{- define "linkservice.metricsServiceLabel" -}}
linkservice/service: metrics
{{- end -}}

{{/* (dict "context" $ "component" "redirect" "hostname" "*.links.example.com") */}}
{{- define "linkservice.ingress" -}}
{{- $ := .context -}}
{{- $ingress := (index $.Values .component).ingress -}}
{{- $service := (index $.Values .component).service -}}
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {{ include "linkservice.componentFullname" . }}
  namespace: {{ $.Release.Namespace | quote }}
  labels:
    {{- include "linkservice.componentLabels" . | nindent 4 }}
  {{- with (include "linkservice.annotations" (dict "context" $ "annotations" $ingress.annotations)) }}
  {{- . | nindent 2 }}
  {{- end }}
spec:
  {{- with $ingress.ingressClassName }}
  ingressClassName: {{ . }}
  {{- end }}
  rules:
    - host: {{ .hostname | quote }}
      http:
        paths:
          - path: {{ $ingress.path }}
            pathType: {{ $ingress.pathType }}
            backend:
              service:
                name: {{ include "linkservice.componentFullname" . }}
                port:
                  number: {{ $service.port }}
  {{- if $ingress.tls }}
  tls:
    - hosts:
        - {{ .hostname | quote }}
      secretName: {{ $ingress.tlsSecretName | default (printf "%s-tls" (include "linkservice.componentFullname" .)) }}
  {{- end }}
{{- end -}}

{{- define "linkservice.pdb" -}}
{{- $ := .context -}}
{{- $pdb := (index $.Values .component).pdb -}}
{{- include "linkservice.checkDisruptionBudget" . -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "linkservice.componentFullname" . }}
  namespace: {{ $.Release.Namespace | quote }}
  labels:
    {{- include "linkservice.componentLabels" . | nindent 4 }}
  {{- with (include "linkservice.annotations" (dict "context" $)) }}
  {{- . | nindent 2 }}
  {{- end }}
spec:
  {{- if and (not (kindIs "invalid" $pdb.maxUnavailable)) (ne (toString $pdb.maxUnavailable) "") }}
  maxUnavailable: {{ $pdb.maxUnavailable }}
  {{- else }}
  minAvailable: {{ $pdb.minAvailable }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "linkservice.componentSelectorLabels" . | nindent 6 }}
{{- end -}}

{{- define "linkservice.hpa" -}}
{{- $ := .context -}}
{{- $autoscaling := (index $.Values .component).autoscaling -}}
{{- if not (or $autoscaling.targetCPU $autoscaling.targetMemory) -}}
{{- fail (printf "%s.autoscaling needs targetCPU or targetMemory" .component) -}}
{{- end -}}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "linkservice.componentFullname" . }}
  namespace: {{ $.Release.Namespace | quote }}
  labels:
    {{- include "linkservice.componentLabels" . | nindent 4 }}
  {{- with (include "linkservice.annotations" (dict "context" $)) }}
  {{- . | nindent 2 }}
  {{- end }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "linkservice.componentFullname" . }}
  minReplicas: {{ $autoscaling.minReplicas }}
  maxReplicas: {{ $autoscaling.maxReplicas }}
  metrics:
    {{- if $autoscaling.targetCPU }}
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ $autoscaling.targetCPU }}
    {{- end }}
    {{- if $autoscaling.targetMemory }}
    - type: Resource
      resource:
        name: memory
        target:
          type: Utilization
          averageUtilization: {{ $autoscaling.targetMemory }}
    {{- end }}
{{- end -}}
