{{/*
Stakater Reloader's values structure (reloader.*, image.name, global,
kubernetes, namespace), so that a Reloader values file installs this chart
and behaves as Reloader's chart (2.2.x) makes Reloader behave, or fails.
files/reloader-keys.yaml lists every key with its verdict: "reroll.fromReloader"
first fails on each refused key (its fix in the message), then writes each
other key onto the Reroll value of the same effect, in .Values, before a
template reads .Values; a Reloader key that is given wins over Reroll's value.
With a reloader: tree, the defaults are Reloader's (env-vars strategy, Argo
Rollouts and DeploymentConfigs left alone). Effects that no Reroll value
has (Reloader's env Secret, probe timings, monitor fields, Service, egress)
go to .Values.__reloader, which the templates read. Every template includes
it first; the marker __reloaderMapped makes the second and later calls do
nothing. docs/migrating-from-reloader.md has the table.
*/}}
{{- define "reroll.fromReloader" -}}
{{- $v := .Values }}
{{- if not (hasKey $v "__reloaderMapped") }}
{{- $_ := set $v "__reloaderMapped" true }}
{{- include "reroll.reloaderRefusals" . }}
{{- $x := dict }}
{{- $_ := set $v "__reloader" $x }}
{{- if hasKey $v "reloader" }}
{{- $r := $v.reloader | default dict }}
{{- /* Reloader serves /metrics over plain HTTP, and its users' monitors,
dashboards and alerts scrape it so: keep that wherever the file is
Reloader's (docs/migrating-from-reloader.md). */}}
{{- $_ := set $v.metrics "secure" false }}
{{- $d := $r.deployment | default dict }}
{{- /* Plain values of the same meaning. */}}
{{- range $from, $to := dict "autoReloadAll" "autoReloadAll" "ignoreSecrets" "ignoreSecrets" "ignoreConfigMaps" "ignoreConfigMaps" "reloadOnCreate" "reloadOnCreate" "reloadOnDelete" "reloadOnDelete" "watchGlobally" "watchGlobally" "resourceLabelSelector" "resourceLabelSelector" "logFormat" "logFormat" "logLevel" "logLevel" }}
{{- if and (hasKey $r $from) (not (kindIs "invalid" (get $r $from))) }}
{{- $_ := set $v $to (get $r $from) }}
{{- end }}
{{- end }}
{{- /* Reloader renders --webhook-url only inside its custom_annotations
block: without custom annotations, the value does nothing there. */}}
{{- if and $r.webhookUrl $r.custom_annotations }}{{ $_ := set $v "webhookUrl" $r.webhookUrl }}{{ end }}
{{- /* Reloader's default strategy is env-vars ("default" leaves its binary's default). */}}
{{- $_ := set $v "reloadStrategy" (ternary "annotations" "env-vars" (eq (toString $r.reloadStrategy) "annotations")) }}
{{- $watchGlobally := $v.watchGlobally }}
{{- /* Reloader renders these two only when it watches globally. */}}
{{- if and $watchGlobally $r.ignoreNamespaces }}
{{- $ns := list }}
{{- range splitList "," (toString $r.ignoreNamespaces) }}{{ if trim . }}{{ $ns = append $ns (trim .) }}{{ end }}{{ end }}
{{- $_ := set $v "ignoreNamespaces" ($ns | uniq) }}
{{- end }}
{{- if and $watchGlobally $r.namespaceSelector }}
{{- $_ := set $v "namespaceSelector" (toString $r.namespaceSelector) }}
{{- end }}
{{- if $r.namespaces }}
{{- /* Reloader always adds the release namespace to the list. */}}
{{- $ns := list .Release.Namespace }}
{{- $given := $r.namespaces }}
{{- if kindIs "string" $given }}{{ $given = splitList "," $given }}{{ end }}
{{- range $given }}{{ if trim (toString .) }}{{ $ns = append $ns (trim (toString .)) }}{{ end }}{{ end }}
{{- $_ := set $v "namespaces" ($ns | uniq | sortAlpha) }}
{{- end }}
{{- $types := $v.ignoredWorkloadTypes | default list }}
{{- if $r.ignoreJobs }}{{ $types = append $types "jobs" }}{{ end }}
{{- if $r.ignoreCronJobs }}{{ $types = append $types "cronjobs" }}{{ end }}
{{- /* Reloader rolls Argo Rollouts only with isArgoRollouts, and never
DeploymentConfigs (isOpenshift only grants them). */}}
{{- if not (eq (toString $r.isArgoRollouts) "true") }}{{ $types = append $types "rollouts" }}{{ end }}
{{- $types = append $types "deploymentconfigs" }}
{{- $_ := set $v "ignoredWorkloadTypes" ($types | uniq) }}
{{- $args := $v.extraArgs | default list }}
{{- if eq (toString $r.isArgoRollouts) "true" }}{{ $args = append $args "--is-Argo-Rollouts=true" }}{{ end }}
{{- if $r.syncAfterRestart }}{{ $args = append $args "--sync-after-restart=true" }}{{ end }}
{{- with $r.custom_annotations }}
{{- range $key, $flag := dict "configmap" "--configmap-annotation" "secret" "--secret-annotation" "auto" "--auto-annotation" "secret_auto" "--secret-auto-annotation" "configmap_auto" "--configmap-auto-annotation" "search" "--auto-search-annotation" "match" "--search-match-annotation" "ignore" "--ignore-annotation" "pausePeriod" "--pause-deployment-annotation" "pauseTime" "--pause-deployment-time-annotation" }}
{{- with get $.Values.reloader.custom_annotations $key }}{{ $args = append $args (printf "%s=%s" $flag .) }}{{ end }}
{{- end }}
{{- end }}
{{- $_ := set $v "extraArgs" ($args | uniq) }}
{{- if $r.enablePProf }}
{{- $_ := set $v.pprof "enabled" true }}
{{- with $r.pprofAddr }}{{ $_ := set $v.pprof "address" . }}{{ end }}
{{- end }}
{{- if hasKey $r "enableCSIIntegration" }}{{ $_ := set $v.csiIntegration "enabled" (eq (toString $r.enableCSIIntegration) "true") }}{{ end }}
{{- /* Leader election: Reloader keeps one replica unless enableHA. */}}
{{- if hasKey $d "replicas" }}
{{- $_ := set $v "replicas" (ternary (int $d.replicas) (min (int $d.replicas) 1) (not (not $r.enableHA))) }}
{{- end }}
{{- range $from, $to := dict "revisionHistoryLimit" "revisionHistoryLimit" "priorityClassName" "priorityClassName" "nodeSelector" "nodeSelector" "affinity" "affinity" "tolerations" "tolerations" "topologySpreadConstraints" "topologySpreadConstraints" "dnsConfig" "dnsConfig" "volumes" "extraVolumes" "volumeMounts" "extraVolumeMounts" "annotations" "deploymentAnnotations" "resources" "resources" "securityContext" "podSecurityContext" "containerSecurityContext" "containerSecurityContext" }}
{{- /* Empty means unset: Reroll keeps its restricted defaults. A map
is merged over Reroll's value, as Helm merges a values file over the defaults. */}}
{{- with get $d $from }}
{{- if kindIs "map" . }}{{ $_ := set $v $to (mergeOverwrite (deepCopy (get $v $to | default dict)) (deepCopy .)) }}{{ else }}{{ $_ := set $v $to . }}{{ end }}
{{- end }}
{{- end }}
{{- if kindIs "bool" $d.hostUsers }}{{ $_ := set $v "hostUsers" $d.hostUsers }}{{ end }}
{{- if kindIs "bool" $d.automountServiceAccountToken }}{{ $_ := set $x "automountServiceAccountToken" $d.automountServiceAccountToken }}{{ end }}
{{- with ($d.pod | default dict).annotations }}{{ $_ := set $v "podAnnotations" (merge (deepCopy .) ($v.podAnnotations | default dict)) }}{{ end }}
{{- /* Reloader labels its Deployment and pods with deployment.labels and matchLabels. */}}
{{- $labels := dict }}
{{- with $d.labels }}{{ $labels = merge (deepCopy .) $labels }}{{ end }}
{{- with $r.matchLabels }}{{ $labels = merge (deepCopy .) $labels }}{{ end }}
{{- $_ := set $v "podLabels" (merge ($v.podLabels | default dict) $labels) }}
{{- $_ := set $x "deploymentLabels" $labels }}
{{- /* Probe timings, with Reloader's defaults. */}}
{{- range $probe := list "livenessProbe" "readinessProbe" }}
{{- $given := get $d $probe | default dict }}
{{- $t := dict }}
{{- range $field, $def := dict "timeoutSeconds" 5 "failureThreshold" 5 "periodSeconds" 10 "successThreshold" 1 "initialDelaySeconds" 10 }}
{{- $_ := set $t $field (int (get $given $field | default $def)) }}
{{- end }}
{{- $_ := set $x $probe $t }}
{{- end }}
{{- $env := $v.extraEnv | default list }}
{{- with $d.gomaxprocsOverride }}{{ $env = append $env (dict "name" "GOMAXPROCS" "value" (toString .)) }}{{ end }}
{{- with $d.gomemlimitOverride }}
{{- $env = append $env (dict "name" "GOMEMLIMIT" "value" (toString .)) }}
{{- $_ := set $v "goMemLimitPercent" 0 }}
{{- end }}
{{- with $d.env }}
{{- range $name, $value := .open | default dict }}{{ if $value }}{{ $env = append $env (dict "name" $name "value" (toString $value)) }}{{ end }}{{ end }}
{{- /* Reloader's chart writes env.secret into a Secret named after the
release and reads each variable from it. */}}
{{- $secret := dict }}
{{- range $name, $value := .secret | default dict }}{{ if $value }}
{{- $_ := set $secret $name (toString $value) }}
{{- $env = append $env (dict "name" $name "valueFrom" (dict "secretKeyRef" (dict "name" (include "reroll.fullname" $) "key" $name))) }}
{{- end }}{{ end }}
{{- with $secret }}{{ $_ := set $x "secretEnv" . }}{{ end }}
{{- range $secretName, $keys := .existing | default dict }}
{{- range $name, $key := $keys | default dict }}{{ if $name }}{{ $env = append $env (dict "name" $name "valueFrom" (dict "secretKeyRef" (dict "name" $secretName "key" $key))) }}{{ end }}{{ end }}
{{- end }}
{{- range $name, $path := .field | default dict }}{{ if $path }}{{ $env = append $env (dict "name" $name "valueFrom" (dict "fieldRef" (dict "fieldPath" $path))) }}{{ end }}{{ end }}
{{- end }}
{{- if $r.enableMetricsByNamespace }}{{ $env = append $env (dict "name" "METRICS_COUNT_BY_NAMESPACE" "value" "enabled") }}{{ end }}
{{- $_ := set $v "extraEnv" $env }}
{{- with $r.rbac }}
{{- if hasKey . "enabled" }}{{ $_ := set $v.rbac "create" .enabled }}{{ end }}
{{- end }}
{{- /* Reloader labels its ServiceAccount with serviceAccount.labels and matchLabels. */}}
{{- $_ := set $x "serviceAccountLabels" (merge (deepCopy (($r.serviceAccount | default dict).labels | default dict)) (deepCopy ($r.matchLabels | default dict))) }}
{{- with $r.serviceAccount }}
{{- if hasKey . "create" }}{{ $_ := set $v.serviceAccount "create" .create }}{{ end }}
{{- with .name }}{{ $_ := set $v.serviceAccount "name" . }}{{ end }}
{{- /* Not created and not named: the namespace's default ServiceAccount, as in Reloader. */}}
{{- if and (not $v.serviceAccount.create) (not $v.serviceAccount.name) }}{{ $_ := set $v.serviceAccount "name" "default" }}{{ end }}
{{- with .annotations }}{{ $_ := set $v.serviceAccount "annotations" . }}{{ end }}
{{- if hasKey . "automountServiceAccountToken" }}{{ $_ := set $x "serviceAccountAutomount" .automountServiceAccountToken }}{{ end }}
{{- end }}
{{- /* The monitors, with every field of Reloader's. */}}
{{- range $kind := list "serviceMonitor" "podMonitor" }}
{{- with get $r $kind }}
{{- $m := get $v $kind }}
{{- if hasKey . "enabled" }}{{ $_ := set $m "enabled" .enabled }}{{ end }}
{{- range $from, $to := dict "namespace" "namespace" "labels" "labels" "interval" "interval" "timeout" "scrapeTimeout" }}
{{- with get (get $.Values.reloader $kind) $from }}{{ $_ := set $m $to . }}{{ end }}
{{- end }}
{{- /* Reloader's default honorLabels is true. */}}
{{- $extra := dict "honorLabels" (ternary .honorLabels true (and (hasKey . "honorLabels") (kindIs "bool" .honorLabels))) }}
{{- range $key := list "annotations" "metricRelabelings" "relabelings" "targetLabels" "podTargetLabels" "tlsConfig" "scheme" "bearerTokenFile" "bearerTokenSecret" }}
{{- with get (get $.Values.reloader $kind) $key }}{{ $_ := set $extra $key . }}{{ end }}
{{- end }}
{{- $_ := set $x $kind $extra }}
{{- end }}
{{- end }}
{{- with $r.podDisruptionBudget }}
{{- range $key := list "enabled" "minAvailable" "maxUnavailable" }}
{{- if hasKey $.Values.reloader.podDisruptionBudget $key }}{{ $_ := set $.Values.podDisruptionBudget $key (get $.Values.reloader.podDisruptionBudget $key) }}{{ end }}
{{- end }}
{{- end }}
{{- with $r.netpol }}
{{- if hasKey . "enabled" }}{{ $_ := set $v.networkPolicy "enabled" .enabled }}{{ end }}
{{- with .from }}{{ $_ := set $v.networkPolicy "metricsFrom" . }}{{ end }}
{{- /* Reloader's egress: port 443 only, to "to" when given. */}}
{{- $rule := dict "ports" (list (dict "port" 443 "protocol" "TCP")) }}
{{- with .to }}{{ $_ := set $rule "to" . }}{{ end }}
{{- $_ := set $x "egress" (list $rule) }}
{{- end }}
{{- with $r.service }}{{ $_ := set $x "service" . }}{{ end }}
{{- with $r.verticalPodAutoscaler }}{{ $_ := set $v "verticalPodAutoscaler" (mergeOverwrite (deepCopy ($v.verticalPodAutoscaler | default dict)) (deepCopy .)) }}{{ end }}
{{- end }}
{{- /* global.imagePullSecrets: names or {name: ...}, as Reloader takes them. */}}
{{- if and (not $v.imagePullSecrets) ($v.global | default dict).imagePullSecrets }}
{{- $secrets := list }}
{{- range $v.global.imagePullSecrets }}{{ if kindIs "string" . }}{{ $secrets = append $secrets (dict "name" .) }}{{ else }}{{ $secrets = append $secrets . }}{{ end }}{{ end }}
{{- $_ := set $v "imagePullSecrets" $secrets }}
{{- end }}
{{- /* Reloader's image is never Reroll's: Reroll's image is taken from the
same registry or mirror path (docs/migrating-from-reloader.md#images).
Reloader's chart pulls <global.imageRegistry>/<image.name> when
global.imageRegistry is set, else image.repository. Reroll's image is that
path with its Reloader suffix replaced: ".../stakater/reloader" by
".../reroll/reroll", a last segment "reloader" by "reroll" (so
ghcr.io/stakater/reloader is ghcr.io/reroll/reroll, an ECR pull-through
cache <account>.dkr.ecr.<region>.amazonaws.com/ghcr/stakater/reloader is
.../ghcr/reroll/reroll, a Harbor proxy path harbor.corp/proxy/reloader is
harbor.corp/proxy/reroll), at the chart's appVersion: Reloader's tag and
digest name Reloader's image. A path whose last segment is not "reloader"
is Reroll's image as given, unless it cannot be told from Reloader's (see
reroll.imageOfReloader). */}}
{{- $from := "" }}
{{- $registry := ($v.global | default dict).imageRegistry }}
{{- if $registry }}
{{- $from = printf "%s/%s" (trimSuffix "/" $registry) ($v.image.name | default "stakater/reloader") }}
{{- else if regexMatch "(^|/)reloader$" (toString $v.image.repository) }}
{{- $from = toString $v.image.repository }}
{{- else if and $v.image.name (not (regexMatch "(^|/)reroll$" (toString $v.image.repository))) (ne (toString $v.image.repository) "ghcr.io/reroll/reroll") }}
{{- /* A Reloader image block (image.name is Reloader's) whose repository is
neither Reloader's nor Reroll's by name: it may be a mirror of either. */}}
{{- fail (printf "image.repository %s: with Reloader's image.name %s, the chart cannot tell whether this is a mirror of Reloader's image or Reroll's; set image.repository to Reroll's image in your registry (e.g. %s) and remove image.name, or to a path ending in /reloader, from which Reroll's is derived" $v.image.repository $v.image.name (regexReplaceAll "[^/]*$" (toString $v.image.repository) "reroll")) }}
{{- end }}
{{- if $from }}
{{- if not (regexMatch "(^|/)reloader$" $from) }}
{{- fail (printf "global.imageRegistry %s with image.name %s: the chart cannot tell where Reroll's image is in that registry (it derives it from a name ending in /reloader); remove global.imageRegistry and image.name, and set image.repository to Reroll's image there" $registry $v.image.name) }}
{{- end }}
{{- $repo := regexReplaceAll "(^|/)reloader$" (regexReplaceAll "(^|/)stakater/reloader$" $from "${1}reroll/reroll") "${1}reroll" }}
{{- /* Reloader's public image: Reroll's public one. */}}
{{- if has $from (list "ghcr.io/stakater/reloader" "stakater/reloader" "docker.io/stakater/reloader" "docker.io/library/stakater/reloader") }}
{{- $repo = "ghcr.io/reroll/reroll" }}
{{- end }}
{{- $_ := set $v "image" (dict "repository" $repo "tag" "" "digest" "" "pullPolicy" ($v.image.pullPolicy | default "IfNotPresent")) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Fails on the first value that files/reloader-keys.yaml refuses, naming the
key and the fix. Run on the values as given, before any mapping.
*/}}
{{- define "reroll.reloaderRefusals" -}}
{{- $table := .Files.Get "files/reloader-keys.yaml" | fromYaml }}
{{- range $row := $table.keys }}
{{- if eq $row.verdict "refused" }}
{{- $cur := $.Values }}
{{- $found := true }}
{{- range splitList "." $row.key }}
{{- if and $found (kindIs "map" $cur) (hasKey $cur .) }}{{ $cur = get $cur . }}{{ else }}{{ $found = false }}{{ end }}
{{- end }}
{{- if and $found (not (empty $cur)) }}
{{- $refused := false }}
{{- if $row.allowedKeys }}
{{- range $k, $val := $cur }}{{ if and $val (not (has $k $row.allowedKeys)) }}{{ $refused = true }}{{ end }}{{ end }}
{{- else }}
{{- $refused = true }}
{{- if and (hasKey $row "default") (eq (toJson $cur) (toJson $row.default)) }}{{ $refused = false }}{{ end }}
{{- if has $cur ($row.allowed | default list) }}{{ $refused = false }}{{ end }}
{{- if and $row.match (not (regexMatch $row.match (toString $cur))) }}{{ $refused = false }}{{ end }}
{{- end }}
{{- if $refused }}
{{- fail (printf "%s: %s" $row.key $row.fix) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
