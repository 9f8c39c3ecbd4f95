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
  {{- /* An autoscaler owns the count: a replicas field here would reset it on every upgrade. */}}
  {{- if not (include "linkservice.autoscaled" .) }}
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
      {{- with (include "linkservice.topologySpreadConstraints" . | trim) }}
      topologySpreadConstraints:
        {{- . | nindent 8 }}
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
  {{- /*
  A pod that is not ready (crash-looping, its Postgres unreachable) counts against the budget
  and serves nothing: without AlwaysAllow it could hold a node drain forever. 1.27+ (beta).
  */}}
  {{- if semverCompare ">=1.27-0" $.Capabilities.KubeVersion.Version }}
  unhealthyPodEvictionPolicy: AlwaysAllow
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
{{- /* Utilization is a share of the request: without one the HPA has nothing to divide by. */}}
{{- $requests := (index $.Values .component).resources.requests | default dict -}}
{{- if and $autoscaling.targetCPU (not $requests.cpu) -}}
{{- fail (printf "%s.autoscaling.targetCPU needs %s.resources.requests.cpu: the HPA's CPU utilisation is a share of it" .component .component) -}}
{{- end -}}
{{- if and $autoscaling.targetMemory (not $requests.memory) -}}
{{- fail (printf "%s.autoscaling.targetMemory needs %s.resources.requests.memory: the HPA's memory utilisation is a share of it" .component .component) -}}
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
  {{- with $autoscaling.behavior }}
  behavior:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/*
The worker's KEDA ScaledObject: KEDA makes and feeds an HPA of its own from a Prometheus query,
the creation queue's waiting jobs. Every worker pod reports the same queue (read from Redis at
each scrape), so the default query takes their max, never their sum, which would grow with the
replicas it is meant to steer. With metricType AverageValue KEDA divides the value by the
replicas: threshold is the waiting jobs one worker may have before another is added.
*/}}
{{- define "linkservice.kedaScaledObject" -}}
{{- $ := .context -}}
{{- $values := index $.Values .component -}}
{{- $keda := $values.autoscaling.keda -}}
{{- $query := $keda.query | default (printf "max(linkservice_queue_jobs{namespace=%q,job=%q,state=\"waiting\"})" $.Release.Namespace .component) -}}
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
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
  pollingInterval: {{ $keda.pollingInterval }}
  minReplicaCount: {{ $keda.minReplicas }}
  maxReplicaCount: {{ $keda.maxReplicas }}
  {{- with $values.autoscaling.behavior }}
  advanced:
    horizontalPodAutoscalerConfig:
      behavior:
        {{- toYaml . | nindent 8 }}
  {{- end }}
  triggers:
    - type: prometheus
      metricType: AverageValue
      metadata:
        serverAddress: {{ required (printf "%s.autoscaling.keda.serverAddress is required when KEDA is enabled" .component) $keda.serverAddress | quote }}
        query: {{ $query | quote }}
        {{- /* KEDA reads every metadata value as a string. */}}
        threshold: {{ $keda.threshold | toString | quote }}
      {{- with $keda.authenticationRef }}
      authenticationRef:
        name: {{ . }}
      {{- end }}
{{- end -}}
