{{/*
Names, labels and shared pod fragments. Components are gateway, worker and redirect; each
component template passes (dict "context" $ "component" "<name>").
*/}}

{{- define "linkservice.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* `<release>-<chart>`, or just the release name when it already contains the chart name. */}}
{{- define "linkservice.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* `<fullname>-<component>`, kept within the 63 characters of a DNS label. */}}
{{- define "linkservice.componentFullname" -}}
{{- $fullname := include "linkservice.fullname" .context | trunc (int (sub 62 (len .component))) | trimSuffix "-" -}}
{{- printf "%s-%s" $fullname .component -}}
{{- end -}}

{{- define "linkservice.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "linkservice.selectorLabels" -}}
app.kubernetes.io/name: {{ include "linkservice.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "linkservice.labels" -}}
{{ include "linkservice.selectorLabels" . }}
helm.sh/chart: {{ include "linkservice.chart" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: linkservice
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "linkservice.componentSelectorLabels" -}}
{{ include "linkservice.selectorLabels" .context }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "linkservice.componentLabels" -}}
{{ include "linkservice.labels" .context }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/*
metadata.annotations with commonAnnotations merged in; empty when there are none. Call as
  {{- with (include "linkservice.annotations" (dict "context" $ "annotations" ...)) }}{{ . | nindent 2 }}{{ end }}
*/}}
{{- define "linkservice.annotations" -}}
{{- $annotations := merge (dict) (.annotations | default dict) (.context.Values.commonAnnotations | default dict) -}}
{{- if $annotations -}}
annotations:
  {{- toYaml $annotations | nindent 2 }}
{{- end -}}
{{- end -}}

{{- define "linkservice.image" -}}
{{- $registry := .Values.global.imageRegistry | default .Values.image.registry -}}
{{- $repository := .Values.image.repository -}}
{{- $reference := "" -}}
{{- if .Values.image.digest -}}
{{- $reference = printf "@%s" .Values.image.digest -}}
{{- else -}}
{{- $reference = printf ":%s" (.Values.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}
{{- if $registry -}}
{{- printf "%s/%s%s" $registry $repository $reference -}}
{{- else -}}
{{- printf "%s%s" $repository $reference -}}
{{- end -}}
{{- end -}}

{{/* The pod's imagePullSecrets block, or nothing. */}}
{{- define "linkservice.imagePullSecrets" -}}
{{- $secrets := concat (.Values.global.imagePullSecrets | default list) (.Values.image.pullSecrets | default list) | uniq -}}
{{- if $secrets -}}
imagePullSecrets:
  {{- range $secrets }}
  - name: {{ . }}
  {{- end }}
{{- end -}}
{{- end -}}

{{- define "linkservice.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "linkservice.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding DATABASE_URL and REDIS_URL: existingSecret, or the chart's own. */}}
{{- define "linkservice.secretName" -}}
{{- .Values.existingSecret | default (include "linkservice.fullname" .) -}}
{{- end -}}

{{- define "linkservice.databaseUrlKey" -}}
{{- if .Values.existingSecret -}}{{ .Values.existingSecretDatabaseUrlKey }}{{- else -}}database-url{{- end -}}
{{- end -}}

{{- define "linkservice.redisUrlKey" -}}
{{- if .Values.existingSecret -}}{{ .Values.existingSecretRedisUrlKey }}{{- else -}}redis-url{{- end -}}
{{- end -}}

{{- define "linkservice.redisClusterNodesKey" -}}
{{- if .Values.existingSecret -}}{{ .Values.existingSecretRedisClusterNodesKey }}{{- else -}}redis-cluster-nodes{{- end -}}
{{- end -}}

{{/* The key holding DATABASE_READ_URL, or nothing when no read replica is configured. */}}
{{- define "linkservice.databaseReadUrlKey" -}}
{{- if .Values.existingSecret -}}
{{- .Values.existingSecretDatabaseReadUrlKey -}}
{{- else if .Values.database.readUrl -}}
database-read-url
{{- end -}}
{{- end -}}

{{/*
`cluster` (REDIS_CLUSTER_NODES) or `single` (REDIS_URL). The services take exactly one of the
two: both would leave which Redis holds the queue to the order a service reads them in, neither
starts nothing. With existingSecret the keys say which, else the values do.
*/}}
{{- define "linkservice.redisMode" -}}
{{- $url := .Values.redis.url -}}
{{- $nodes := .Values.redis.clusterNodes -}}
{{- $urlName := "redis.url" -}}
{{- $nodesName := "redis.clusterNodes" -}}
{{- if .Values.existingSecret -}}
{{- $url = .Values.existingSecretRedisUrlKey -}}
{{- $nodes = .Values.existingSecretRedisClusterNodesKey -}}
{{- $urlName = "existingSecretRedisUrlKey" -}}
{{- $nodesName = "existingSecretRedisClusterNodesKey" -}}
{{- end -}}
{{- if and $url $nodes -}}
{{- fail (printf "%s and %s are both set: set exactly one, %s for a single Redis (REDIS_URL) or %s for a Redis Cluster (REDIS_CLUSTER_NODES); for a cluster, also set %s=''" $urlName $nodesName $urlName $nodesName $urlName) -}}
{{- else if $nodes -}}
cluster
{{- else if $url -}}
single
{{- else -}}
{{- fail (printf "no Redis: set %s for a single Redis (REDIS_URL) or %s for a Redis Cluster (REDIS_CLUSTER_NODES)" $urlName $nodesName) -}}
{{- end -}}
{{- end -}}

{{/*
The Secret and key the gateway reads RECEIPT_SIGNING_KEY from: receiptSigning.existingSecret, or
the chart's own `<fullname>-receipt-signing` holding receiptSigning.key. Exactly one is required:
without a key the gateway cannot sign erasure receipts and refuses to start.
*/}}
{{- define "linkservice.receiptSigning.secretName" -}}
{{- $receiptSigning := .Values.receiptSigning -}}
{{- if and $receiptSigning.existingSecret $receiptSigning.key -}}
{{- fail "receiptSigning.existingSecret and receiptSigning.key are both set: set only one" -}}
{{- else if $receiptSigning.existingSecret -}}
{{- $receiptSigning.existingSecret -}}
{{- else if $receiptSigning.key -}}
{{- include "linkservice.componentFullname" (dict "context" . "component" "receipt-signing") -}}
{{- else -}}
{{- fail "the gateway needs a receipt signing key (RECEIPT_SIGNING_KEY): set receiptSigning.existingSecret to a Secret holding an Ed25519 private key (PKCS#8 PEM) under receiptSigning.existingSecretKey, or pass one with --set-file receiptSigning.key=<file> (openssl genpkey -algorithm ed25519)" -}}
{{- end -}}
{{- end -}}

{{- define "linkservice.receiptSigning.secretKey" -}}
{{- if .Values.receiptSigning.existingSecret -}}{{ .Values.receiptSigning.existingSecretKey }}{{- else -}}receipt-signing-key{{- end -}}
{{- end -}}

{{/*
The gateway's RECEIPT_SIGNING_KEY, from the Secret above, and the public keys of keys rotated
out (public: a plain value), which its JWKS serves too.
*/}}
{{- define "linkservice.receiptSigning.env" -}}
- name: RECEIPT_SIGNING_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "linkservice.receiptSigning.secretName" . }}
      key: {{ include "linkservice.receiptSigning.secretKey" . }}
{{- with .Values.receiptSigning.previousPublicKeys }}
- name: RECEIPT_PREVIOUS_PUBLIC_KEYS
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* Rolls the gateway when the chart's own signing key changes; an existingSecret is not watched. */}}
{{- define "linkservice.receiptSigning.checksum" -}}
{{- if not .Values.receiptSigning.existingSecret -}}
checksum/receipt-signing: {{ include (print .Template.BasePath "/gateway/receipt-signing-secret.yaml") . | sha256sum }}
{{- end -}}
{{- end -}}

{{/*
The Secret the gateway and the worker read WEBHOOK_ENCRYPTION_KEY from:
webhooks.encryption.existingSecret, or the chart's own `<fullname>-webhook-encryption` holding
webhooks.encryption.key. Exactly one is required: the gateway seals each endpoint's signing secret
with the key and the worker opens it to sign deliveries, so neither starts without it, and both
must read the same one.
*/}}
{{- define "linkservice.webhookEncryption.secretName" -}}
{{- $encryption := .Values.webhooks.encryption -}}
{{- if and $encryption.existingSecret $encryption.key -}}
{{- fail "webhooks.encryption.existingSecret and webhooks.encryption.key are both set: set only one" -}}
{{- else if $encryption.existingSecret -}}
{{- if $encryption.previousKeys -}}
{{- fail "webhooks.encryption.previousKeys goes into the chart's own Secret, which webhooks.encryption.existingSecret replaces: put the previous keys in that Secret and name their key in webhooks.encryption.existingSecretPreviousKeysKey" -}}
{{- end -}}
{{- $encryption.existingSecret -}}
{{- else if $encryption.key -}}
{{- include "linkservice.componentFullname" (dict "context" . "component" "webhook-encryption") -}}
{{- else -}}
{{- fail "the gateway and the worker need a webhook encryption key (WEBHOOK_ENCRYPTION_KEY, 32 random bytes, base64): make one with `openssl rand -base64 32` and pass it as webhooks.encryption.key (or --set-file webhooks.encryption.key=<file>), or set webhooks.encryption.existingSecret to a Secret holding it under webhooks.encryption.existingSecretKey" -}}
{{- end -}}
{{- end -}}

{{- define "linkservice.webhookEncryption.secretKey" -}}
{{- if .Values.webhooks.encryption.existingSecret -}}{{ .Values.webhooks.encryption.existingSecretKey }}{{- else -}}webhook-encryption-key{{- end -}}
{{- end -}}

{{/* The key holding WEBHOOK_PREVIOUS_ENCRYPTION_KEYS, or nothing when no key was rotated out. */}}
{{- define "linkservice.webhookEncryption.previousKeysKey" -}}
{{- if .Values.webhooks.encryption.existingSecret -}}
{{- .Values.webhooks.encryption.existingSecretPreviousKeysKey -}}
{{- else if (include "linkservice.commaList" .Values.webhooks.encryption.previousKeys) -}}
webhook-previous-encryption-keys
{{- end -}}
{{- end -}}

{{/* A value given as a list or as a comma-separated string, as one comma-separated string. */}}
{{- define "linkservice.commaList" -}}
{{- $items := . -}}
{{- if kindIs "string" . -}}
{{- $items = splitList "," . -}}
{{- end -}}
{{- $trimmed := list -}}
{{- range $items -}}
{{- with (toString . | trim) -}}
{{- $trimmed = append $trimmed . -}}
{{- end -}}
{{- end -}}
{{- join "," $trimmed -}}
{{- end -}}

{{/* WEBHOOK_ENCRYPTION_KEY and, when keys were rotated out, WEBHOOK_PREVIOUS_ENCRYPTION_KEYS. */}}
{{- define "linkservice.webhookEncryption.env" -}}
- name: WEBHOOK_ENCRYPTION_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "linkservice.webhookEncryption.secretName" . }}
      key: {{ include "linkservice.webhookEncryption.secretKey" . }}
{{- with (include "linkservice.webhookEncryption.previousKeysKey" .) }}
- name: WEBHOOK_PREVIOUS_ENCRYPTION_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ include "linkservice.webhookEncryption.secretName" $ }}
      key: {{ . }}
{{- end }}
{{- end -}}

{{/* Rolls the gateway and the worker together when the chart's own keys change; an existingSecret is not watched. */}}
{{- define "linkservice.webhookEncryption.checksum" -}}
{{- if not .Values.webhooks.encryption.existingSecret -}}
checksum/webhook-encryption: {{ include (print .Template.BasePath "/webhook-encryption-secret.yaml") . | sha256sum }}
{{- end -}}
{{- end -}}

{{/* The configmap's rendered text, hashed into pod annotations so a config change rolls pods. */}}
{{- define "linkservice.configChecksums" -}}
checksum/config: {{ include (print .Template.BasePath "/configmap.yaml") . | sha256sum }}
{{- if not .Values.existingSecret }}
checksum/secret: {{ include (print .Template.BasePath "/secret.yaml") . | sha256sum }}
{{- end }}
{{- end -}}

{{/* Pod-level settings every linkservice pod shares. */}}
{{- define "linkservice.podSecurity" -}}
automountServiceAccountToken: {{ .Values.serviceAccount.automountServiceAccountToken }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end -}}

{{- define "linkservice.volumes" -}}
volumes:
  - name: tmp
    emptyDir:
      {{- if .Values.tmpVolume.medium }}
      medium: {{ .Values.tmpVolume.medium }}
      {{- end }}
      {{- if .Values.tmpVolume.sizeLimit }}
      sizeLimit: {{ .Values.tmpVolume.sizeLimit }}
      {{- end }}
  {{- with .Values.extraVolumes }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}

{{- define "linkservice.volumeMounts" -}}
volumeMounts:
  - name: tmp
    mountPath: /tmp
  {{- with .Values.extraVolumeMounts }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}

{{/*
Connection URLs from the Secret, then extra variables. (dict "context" $ "secretName" ... "extra" list)
*/}}
{{- define "linkservice.secretEnv" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ include "linkservice.databaseUrlKey" .context }}
{{- with (include "linkservice.databaseReadUrlKey" .context) }}
- name: DATABASE_READ_URL
  valueFrom:
    secretKeyRef:
      name: {{ $.secretName }}
      key: {{ . }}
{{- end }}
{{- if eq (include "linkservice.redisMode" .context) "cluster" }}
- name: REDIS_CLUSTER_NODES
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ include "linkservice.redisClusterNodesKey" .context }}
{{- else }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ include "linkservice.redisUrlKey" .context }}
{{- end }}
{{- end -}}

{{/* envFrom entries for extraEnvVarsCM and extraEnvVarsSecret, or nothing. */}}
{{- define "linkservice.extraEnvFrom" -}}
{{- $entries := list -}}
{{- with .Values.extraEnvVarsCM -}}
{{- $entries = append $entries (dict "configMapRef" (dict "name" .)) -}}
{{- end -}}
{{- with .Values.extraEnvVarsSecret -}}
{{- $entries = append $entries (dict "secretRef" (dict "name" .)) -}}
{{- end -}}
{{- if $entries -}}
{{- toYaml $entries -}}
{{- end -}}
{{- end -}}

{{/* An HTTP probe from a component's probe values. (dict "probe" values "path" "/healthz") */}}
{{- define "linkservice.httpProbe" -}}
httpGet:
  path: {{ .path }}
  port: {{ .port }}
initialDelaySeconds: {{ .probe.initialDelaySeconds }}
periodSeconds: {{ .probe.periodSeconds }}
timeoutSeconds: {{ .probe.timeoutSeconds }}
failureThreshold: {{ .probe.failureThreshold }}
successThreshold: {{ .probe.successThreshold }}
{{- end -}}

{{/*
Kubernetes kills the container terminationGracePeriodSeconds after termination starts: the
preStop sleep, the service's own shutdown grace and a few seconds to close Redis and Postgres
(and flush clicks) have to fit inside it.
*/}}
{{- define "linkservice.checkGracePeriod" -}}
{{- $values := index .context.Values .component -}}
{{- $budgetMs := mul (int $values.terminationGracePeriodSeconds) 1000 -}}
{{- $neededMs := add (mul (int ($values.preStopSleepSeconds | default 0)) 1000) (int $values.shutdownGraceMs) 5000 -}}
{{- if lt $budgetMs $neededMs -}}
{{- fail (printf "%s.terminationGracePeriodSeconds (%ds) must be at least preStopSleepSeconds + shutdownGraceMs + 5s (%dms)" .component (int $values.terminationGracePeriodSeconds) $neededMs) -}}
{{- end -}}
{{- end -}}

{{/*
The component's affinity: its own `affinity` value when set, else the podAntiAffinityPreset
spreading its pods over nodes, so one node going away takes at most one replica when it can.
*/}}
{{- define "linkservice.affinity" -}}
{{- $values := index .context.Values .component -}}
{{- $selector := include "linkservice.componentSelectorLabels" . -}}
{{- if $values.affinity -}}
{{- toYaml $values.affinity -}}
{{- else if eq $values.podAntiAffinityPreset "soft" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- $selector | nindent 12 }}
{{- else if eq $values.podAntiAffinityPreset "hard" -}}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          {{- $selector | nindent 10 }}
{{- end -}}
{{- end -}}

{{/*
"true" when an autoscaler (the chart's HPA, or KEDA's for the worker) owns the replica count of
the component, else empty. Both at once would be two HPAs fighting over one Deployment.
*/}}
{{- define "linkservice.autoscaled" -}}
{{- $autoscaling := (index .context.Values .component).autoscaling -}}
{{- $keda := dig "keda" "enabled" false $autoscaling -}}
{{- if and $autoscaling.enabled $keda -}}
{{- fail (printf "%s.autoscaling.enabled and %s.autoscaling.keda.enabled are both true: KEDA makes an HPA of its own, and two HPAs on one Deployment fight; enable one" .component .component) -}}
{{- end -}}
{{- if or $autoscaling.enabled $keda -}}true{{- end -}}
{{- end -}}

{{/*
The component's topology spread: its own topologySpreadConstraints when set, else one
constraint over nodes and one over zones (topologySpread values) selecting the component's own
pods. On Kubernetes 1.27+ matchLabelKeys counts only pods of the same ReplicaSet, so a rolling
update is spread by its new pods, not skewed by the old ones about to go.
*/}}
{{- define "linkservice.topologySpreadConstraints" -}}
{{- $values := index .context.Values .component -}}
{{- $spread := $values.topologySpread -}}
{{- $selector := include "linkservice.componentSelectorLabels" . -}}
{{- $byReplicaSet := semverCompare ">=1.27-0" .context.Capabilities.KubeVersion.Version -}}
{{- if $values.topologySpreadConstraints -}}
{{- toYaml $values.topologySpreadConstraints -}}
{{- else if $spread.enabled -}}
{{- range (list "kubernetes.io/hostname" "topology.kubernetes.io/zone") }}
- topologyKey: {{ . }}
  maxSkew: {{ $spread.maxSkew }}
  whenUnsatisfiable: {{ $spread.whenUnsatisfiable }}
  labelSelector:
    matchLabels:
      {{- $selector | nindent 6 }}
  {{- if $byReplicaSet }}
  matchLabelKeys:
    - pod-template-hash
  {{- end }}
{{- end }}
{{- end -}}
{{- end -}}

{{/*
A PodDisruptionBudget that keeps every replica up lets no eviction through, so every node drain
(upgrades, autoscaler scale-down) hangs on it. Compared with the replicas that exist at the
least: replicaCount, or the autoscaler's minimum (the HPA's, or KEDA's for the worker).
Percentages round up, as Kubernetes does. A maxUnavailable of 1 or more (the default) always
lets a pod go, at any replica count, one replica included.
*/}}
{{- define "linkservice.checkDisruptionBudget" -}}
{{- $values := index .context.Values .component -}}
{{- $pdb := $values.pdb -}}
{{- $replicas := int $values.replicaCount -}}
{{- $replicasFrom := printf "%s.replicaCount" .component -}}
{{- if $values.autoscaling.enabled -}}
{{- $replicas = int $values.autoscaling.minReplicas -}}
{{- $replicasFrom = printf "%s.autoscaling.minReplicas" .component -}}
{{- else if (dig "keda" "enabled" false $values.autoscaling) -}}
{{- $replicas = int $values.autoscaling.keda.minReplicas -}}
{{- $replicasFrom = printf "%s.autoscaling.keda.minReplicas" .component -}}
{{- end -}}
{{- $maxUnavailable := "" -}}
{{- if not (kindIs "invalid" $pdb.maxUnavailable) -}}
{{- $maxUnavailable = toString $pdb.maxUnavailable -}}
{{- end -}}
{{- if ne $maxUnavailable "" -}}
{{- if regexMatch "^0+%?$" $maxUnavailable -}}
{{- fail (printf "%s.pdb.maxUnavailable is %s: the PodDisruptionBudget would let no %s pod be evicted and block every node drain; raise it or set %s.pdb.create=false" .component $maxUnavailable .component .component) -}}
{{- end -}}
{{- else if or (kindIs "invalid" $pdb.minAvailable) (eq (toString $pdb.minAvailable) "") -}}
{{- fail (printf "%s.pdb sets neither maxUnavailable nor minAvailable: set one, or %s.pdb.create=false" .component .component) -}}
{{- else -}}
{{- $minAvailable := toString $pdb.minAvailable -}}
{{- $kept := 0 -}}
{{- if hasSuffix "%" $minAvailable -}}
{{- $kept = div (add (mul $replicas (int (trimSuffix "%" $minAvailable))) 99) 100 -}}
{{- else -}}
{{- $kept = int $minAvailable -}}
{{- end -}}
{{- if ge (int $kept) $replicas -}}
{{- fail (printf "%s.pdb.minAvailable (%s) must be below %s (%d): a PodDisruptionBudget that keeps every %s pod up blocks every node drain; lower it, raise %s or set %s.pdb.create=false" .component $minAvailable $replicasFrom $replicas .component $replicasFrom .component) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The migration hook runs before the release's own Secret and ServiceAccount exist (pre-install),
so it brings copies of its own, created just before it and deleted once it succeeded.
*/}}
{{- define "linkservice.migration.hookAnnotations" -}}
helm.sh/hook: pre-install,pre-upgrade
helm.sh/hook-weight: {{ .weight | quote }}
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end -}}

{{/* The migration's DATABASE_URL key: its own, for a URL that bypasses PgBouncer, or the services'. */}}
{{- define "linkservice.migration.databaseUrlKey" -}}
{{- if .Values.existingSecret -}}
{{- .Values.existingSecretMigrationDatabaseUrlKey | default .Values.existingSecretDatabaseUrlKey -}}
{{- else -}}
database-url
{{- end -}}
{{- end -}}

{{- define "linkservice.migration.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- include "linkservice.componentFullname" (dict "context" . "component" "migration") -}}
{{- else -}}
{{- include "linkservice.serviceAccountName" . -}}
{{- end -}}
{{- end -}}
