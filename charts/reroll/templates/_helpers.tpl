{{/* The chart name, or nameOverride. */}}
{{- define "reroll.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the prefix of every object it creates. */}}
{{- define "reroll.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels that select the release's pods. */}}
{{- define "reroll.selectorLabels" -}}
app.kubernetes.io/name: {{ include "reroll.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "reroll.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "reroll.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "reroll.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "reroll.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The watched namespaces, comma-separated, or "" for cluster scope: the
namespaces list when set, else the release namespace when watchGlobally is
false. Namespace scope means Roles in exactly these namespaces and no
ClusterRole.
*/}}
{{- define "reroll.watchedNamespaces" -}}
{{- if .Values.namespaces }}
{{- join "," .Values.namespaces }}
{{- else if not .Values.watchGlobally }}
{{- .Release.Namespace }}
{{- end }}
{{- end }}

{{/*
The Secret of the metrics bearer token (--metrics-token-secret) that Reroll
creates in the release namespace, or "" when metrics are not protected by a
token (metrics.secure false, or metrics.auth kubernetes).
*/}}
{{- define "reroll.metricsTokenSecret" -}}
{{- if and .Values.metrics.secure (eq .Values.metrics.auth "token") }}
{{- printf "%s-metrics-token" (include "reroll.fullname" .) }}
{{- end }}
{{- end }}

{{/*
The scrape settings of a ServiceMonitor or PodMonitor endpoint in namespace
.ns (the monitor's) for metrics.secure; fails where no setting can work.
*/}}
{{- define "reroll.monitorAuth" -}}
{{- $ := .root }}
{{- if $.Values.metrics.secure }}
{{- $token := include "reroll.metricsTokenSecret" $ }}
{{- if not $token }}
{{- fail (printf "%s.enabled with metrics.auth=kubernetes: a monitor cannot send Prometheus's own ServiceAccount token without the deprecated bearerTokenFile; use metrics.auth=token (the default), or metrics.secure=false" .kind) }}
{{- end }}
{{- if ne .ns $.Release.Namespace }}
{{- fail (printf "%s.namespace %s with metrics.secure: Prometheus reads a monitor's token from the monitor's namespace, and Reroll keeps it (Secret %s) in the release namespace %s; leave %s.namespace empty, or set metrics.secure=false" .kind .ns $token $.Release.Namespace .kind) }}
{{- end }}
# metrics.secure: HTTPS, with the bearer token that Reroll keeps in Secret
# {{ $token }} (it creates it on first start). The certificate is
# self-signed.
scheme: https
authorization:
  type: Bearer
  credentials:
    name: {{ $token }}
    key: token
tlsConfig:
  insecureSkipVerify: true
{{- end }}
{{- end }}

{{/* The Secret of the digest key (--digest-key-secret). */}}
{{- define "reroll.digestKeySecret" -}}
{{- default (printf "%s-digest-key" (include "reroll.fullname" .)) .Values.digestKey.secretName }}
{{- end }}

{{/*
"true" when the PodDisruptionBudget the values describe always allows at
least one eviction, so it can never block a node drain: maxUnavailable of at
least one pod (a percentage rounds up, as Kubernetes does), or minAvailable
below replicas (a percentage rounds up). "" otherwise: with one replica and
minAvailable the chart creates no budget (minAvailable: 1 of 1 would block
every drain); a budget that allows no eviction with more replicas is an
error.
*/}}
{{- define "reroll.pdbAllowsDrain" -}}
{{- $replicas := int .Values.replicas }}
{{- with .Values.podDisruptionBudget }}
{{- if not (kindIs "invalid" .maxUnavailable) }}
{{- $max := toString .maxUnavailable }}
{{- if or (eq $max "0") (eq $max "0%") }}
{{- fail "podDisruptionBudget.maxUnavailable: 0 would block every node drain; use 1 or more" }}
{{- end }}
{{- print "true" }}
{{- else if gt $replicas 1 }}
{{- $min := toString .minAvailable }}
{{- $minPods := 0 }}
{{- if hasSuffix "%" $min }}
{{- $pct := trimSuffix "%" $min | int }}
{{- $minPods = div (add (mul $pct $replicas) 99) 100 }}
{{- else }}
{{- $minPods = int .minAvailable }}
{{- end }}
{{- if ge $minPods $replicas }}
{{- fail (printf "podDisruptionBudget.minAvailable %s of %d replicas would block every node drain; set it below replicas, or use maxUnavailable" $min $replicas) }}
{{- end }}
{{- print "true" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Leader election is on with more than one replica. */}}
{{- define "reroll.leaderElection" -}}
{{- if gt (int .Values.replicas) 1 }}true{{ end }}
{{- end }}

{{/*
Checks that values agree with each other where the schema cannot say it.
*/}}
{{- define "reroll.validate" -}}
{{- if and .Values.webhookUrl .Values.webhookUrlSecret.name }}
{{- fail "webhookUrl and webhookUrlSecret.name are both set: set one" }}
{{- end }}
{{- if le (int .Values.terminationGracePeriodSeconds) (int .Values.gracefulShutdownTimeoutSeconds) }}
{{- fail "terminationGracePeriodSeconds must be larger than gracefulShutdownTimeoutSeconds, or the kubelet kills Reroll before it has shut down" }}
{{- end }}
{{- if and .Values.ignoreSecrets .Values.ignoreConfigMaps }}
{{- fail "ignoreSecrets and ignoreConfigMaps are both true: that leaves nothing to watch" }}
{{- end }}
{{- $watched := include "reroll.watchedNamespaces" . }}
{{- if and $watched .Values.namespaceSelector }}
{{- fail (printf "namespaceSelector needs cluster scope (watchGlobally: true and no namespaces list); this release watches only %s" $watched) }}
{{- end }}
{{- if and .Values.alerts.enabled (not .Values.alerts.urlSecret.name) }}
{{- fail "alerts.enabled needs alerts.urlSecret.name: the Secret that holds the alert URL (ALERT_WEBHOOK_URL)" }}
{{- end }}
{{- if and $watched .Values.metrics.secure (eq .Values.metrics.auth "kubernetes") }}
{{- fail (printf "metrics.auth=kubernetes needs a ClusterRole (TokenReview and SubjectAccessReview are cluster-scoped), and this release watches only %s, with no cluster-scoped object: use metrics.auth=token (the default)" $watched) }}
{{- end }}
{{- range .Values.ignoreNamespaces }}
{{- if has . (splitList "," $watched) }}
{{- fail (printf "namespace %s is both watched and in ignoreNamespaces" .) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The RBAC rules for the watched objects: the rules controller-gen generates
into config/rbac/role.yaml from the +kubebuilder:rbac markers, minus what the
values make unnecessary (Namespaces in namespace scope, where a Role cannot
grant them; the kinds in ignoreSecrets, ignoreConfigMaps and
ignoredWorkloadTypes), plus config/components/csi/role.yaml with
csiIntegration.enabled and config/components/pod-eviction/role.yaml with
podEviction.enabled. test/e2e compares them with those files, so code and
chart cannot drift; docs/security.md lists them.
*/}}
{{- define "reroll.rules" -}}
{{- $read := list }}
{{- if not .Values.ignoreConfigMaps }}{{ $read = append $read "configmaps" }}{{ end }}
{{- if not (include "reroll.watchedNamespaces" .) }}{{ $read = append $read "namespaces" }}{{ end }}
{{- if not .Values.ignoreSecrets }}{{ $read = append $read "secrets" }}{{ end }}
{{- $workloads := list }}
{{- range list "daemonsets" "deployments" "statefulsets" }}
{{- if not (has . $.Values.ignoredWorkloadTypes) }}{{ $workloads = append $workloads . }}{{ end }}
{{- end }}
- apiGroups: [""]
  resources: {{ toJson $read }}
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- if .Values.podEviction.enabled }}
{{- /* config/components/pod-eviction/role.yaml, generated from internal/eviction/rbac.go. */}}
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch"]
- apiGroups: [""]
  resources: ["pods/eviction"]
  verbs: ["create"]
{{- end }}
{{- if .Values.versionedConfig.enabled }}
{{- /* config/components/versioned-config/role.yaml, generated from internal/pin/rbac.go. */}}
- apiGroups: [""]
  resources: ["configmaps", "secrets"]
  verbs: ["create", "delete", "patch"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list"]
- apiGroups: ["apps"]
  resources: ["controllerrevisions", "replicasets"]
  verbs: ["list"]
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["list"]
{{- end }}
{{- if $workloads }}
- apiGroups: ["apps"]
  resources: {{ toJson $workloads }}
  verbs: ["get", "list", "patch", "watch"]
{{- end }}
{{- /* Namespace scope grants the kinds of other projects only where the
API server serves them at install: a namespace admin may grant only what
the admin role holds, and it holds them only with their CRDs (their
aggregate-to-admin roles). Reroll watches them only where served. */}}
{{- $clusterScope := not (include "reroll.watchedNamespaces" .) }}
{{- if and (not (has "deploymentconfigs" .Values.ignoredWorkloadTypes)) (or $clusterScope (.Capabilities.APIVersions.Has "apps.openshift.io/v1")) }}
- apiGroups: ["apps.openshift.io"]
  resources: ["deploymentconfigs"]
  verbs: ["get", "list", "patch", "watch"]
{{- end }}
{{- if and (not (has "rollouts" .Values.ignoredWorkloadTypes)) (or $clusterScope (.Capabilities.APIVersions.Has "argoproj.io/v1alpha1")) }}
- apiGroups: ["argoproj.io"]
  resources: ["rollouts"]
  verbs: ["get", "list", "patch", "watch"]
{{- end }}
{{- if not (has "cronjobs" .Values.ignoredWorkloadTypes) }}
- apiGroups: ["batch"]
  resources: ["cronjobs"]
  verbs: ["get", "list", "patch", "watch"]
{{- end }}
{{- if not (has "jobs" .Values.ignoredWorkloadTypes) }}
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["create", "delete", "get", "list", "patch", "watch"]
{{- end }}
{{- if .Values.csiIntegration.enabled }}
{{- /* config/components/csi/role.yaml, generated from cmd/reroll/csi.go. */}}
- apiGroups: ["secrets-store.csi.x-k8s.io"]
  resources: ["secretproviderclasspodstatuses"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- if and .Values.validation.enabled $clusterScope }}
{{- /* Validators and ClusterValidators (docs/validation.md): read them,
write their status. Cluster scope only: a namespace admin holds no right on
them to grant. */}}
- apiGroups: ["reroll.dev"]
  resources: ["clustervalidators", "validators"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["reroll.dev"]
  resources: ["clustervalidators/status", "validators/status"]
  verbs: ["patch"]
{{- end }}
{{- if .Values.projections.enabled }}
{{- /* Projections: Reroll reads and writes targets only by impersonating
the Projection's ServiceAccount (docs/projections.md#security). */}}
- apiGroups: [""]
  resources: ["serviceaccounts"]
  verbs: ["impersonate"]
- apiGroups: ["reroll.dev"]
  resources: ["projections"]
  verbs: ["get", "list", "patch", "update", "watch"]
- apiGroups: ["reroll.dev"]
  resources: ["projections/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: ["reroll.dev"]
  resources: ["projections/finalizers"]
  verbs: ["update"]
{{- end }}
{{- end }}

{{/* The Secret holding the HMAC key of Projections' digests. */}}
{{/* Whether Projections read their key from a Secret (else it is derived
from the installation key). */}}
{{- define "reroll.projectionKeyFile" -}}
{{- if or .Values.projections.keySecret.create .Values.projections.keySecret.name }}true{{ end }}
{{- end }}

{{- define "reroll.projectionKeySecret" -}}
{{- default (printf "%s-projection-key" (include "reroll.fullname" .)) .Values.projections.keySecret.name }}
{{- end }}

{{/* The container image: repository@digest, else repository:tag. */}}
{{- define "reroll.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
GOMEMLIMIT in bytes: goMemLimitPercent of resources.limits.memory, or "" when
either is unset. Parses a Kubernetes quantity: a decimal number with an
optional suffix k, M, G, T, P, E or Ki, Mi, Gi, Ti, Pi, Ei.
*/}}
{{- define "reroll.goMemLimit" -}}
{{- $limit := "" }}
{{- with .Values.resources }}{{ with .limits }}{{ with .memory }}
{{- /* A number given with --set-json arrives as a float64. */}}
{{- $limit = kindIs "float64" . | ternary (printf "%.0f" .) (toString .) }}
{{- end }}{{ end }}{{ end }}
{{- if and $limit .Values.goMemLimitPercent }}
{{- $pattern := "^([0-9]+(?:\\.[0-9]+)?)(|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)$" }}
{{- if not (regexMatch $pattern $limit) }}
{{- fail (printf "resources.limits.memory %q: want a number with an optional suffix (Mi, Gi, M, G, ...) to compute GOMEMLIMIT, or set goMemLimitPercent: 0" $limit) }}
{{- end }}
{{- $number := regexReplaceAll $pattern $limit "${1}" | float64 }}
{{- $unit := regexReplaceAll $pattern $limit "${2}" }}
{{- $factors := dict "" 1.0 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 }}
{{- $bytes := mulf $number (get $factors $unit) }}
{{- printf "%.0f" (floor (divf (mulf $bytes .Values.goMemLimitPercent) 100)) }}
{{- end }}
{{- end }}
