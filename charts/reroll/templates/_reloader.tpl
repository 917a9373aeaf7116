{{/*
Stakater Reloader's values structure (reloader.*, image.name, global,
kubernetes, namespace), so that a Reloader values file installs this chart
unchanged. "reroll.fromReloader" writes each Reloader key that has a meaning
for Reroll onto Reroll's own value, in .Values, before a template reads
.Values; a Reloader key that is given wins over Reroll's value. Keys without a
meaning here are listed in .Values.__reloaderNotes, which NOTES.txt prints.
Every template includes it first; the marker __reloaderMapped makes the
second and later calls do nothing, so the mapping is applied once whether or
not the templates share .Values. docs/migrating-from-reloader.md has the table.
*/}}
{{- define "reroll.fromReloader" -}}
{{- $v := .Values }}
{{- if not (hasKey $v "__reloaderMapped") }}
{{- $_ := set $v "__reloaderMapped" true }}
{{- $notes := list }}
{{- $r := $v.reloader | default dict }}
{{- $d := $r.deployment | default dict }}
{{- /* Plain values of the same meaning. */}}
{{- range $from, $to := dict "autoReloadAll" "autoReloadAll" "ignoreSecrets" "ignoreSecrets" "ignoreConfigMaps" "ignoreConfigMaps" "reloadOnCreate" "reloadOnCreate" "reloadOnDelete" "reloadOnDelete" "watchGlobally" "watchGlobally" "resourceLabelSelector" "resourceLabelSelector" "logFormat" "logFormat" "logLevel" "logLevel" "webhookUrl" "webhookUrl" }}
{{- if and (hasKey $r $from) (not (kindIs "invalid" (get $r $from))) }}
{{- $_ := set $v $to (get $r $from) }}
{{- end }}
{{- end }}
{{- if and $r.reloadStrategy (ne (toString $r.reloadStrategy) "") }}
{{- /* Reloader's "default" leaves its binary's default, env-vars. */}}
{{- $_ := set $v "reloadStrategy" (ternary "env-vars" $r.reloadStrategy (eq (toString $r.reloadStrategy) "default")) }}
{{- end }}
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
{{- $_ := set $v "ignoredWorkloadTypes" ($types | uniq) }}
{{- $args := $v.extraArgs | default list }}
{{- if $r.isArgoRollouts }}{{ $args = append $args "--is-Argo-Rollouts=true" }}{{ end }}
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
{{- range $from, $to := dict "revisionHistoryLimit" "revisionHistoryLimit" "priorityClassName" "priorityClassName" "runtimeClassName" "runtimeClassName" "schedulerName" "schedulerName" "nodeSelector" "nodeSelector" "affinity" "affinity" "tolerations" "tolerations" "topologySpreadConstraints" "topologySpreadConstraints" "dnsConfig" "dnsConfig" "volumes" "extraVolumes" "volumeMounts" "extraVolumeMounts" "annotations" "deploymentAnnotations" "resources" "resources" "securityContext" "podSecurityContext" "containerSecurityContext" "containerSecurityContext" }}
{{- /* Empty means unset: Reroll keeps its restricted defaults. A map
is merged over Reroll's value, as Helm merges a values file over the defaults. */}}
{{- with get $d $from }}
{{- if kindIs "map" . }}{{ $_ := set $v $to (mergeOverwrite (deepCopy (get $v $to | default dict)) (deepCopy .)) }}{{ else }}{{ $_ := set $v $to . }}{{ end }}
{{- end }}
{{- end }}
{{- if kindIs "bool" $d.hostUsers }}{{ $_ := set $v "hostUsers" $d.hostUsers }}{{ end }}
{{- with ($d.pod | default dict).annotations }}{{ $_ := set $v "podAnnotations" (merge (deepCopy .) ($v.podAnnotations | default dict)) }}{{ end }}
{{- $labels := $v.podLabels | default dict }}
{{- with $d.labels }}{{ $labels = merge (deepCopy .) $labels }}{{ end }}
{{- with $r.matchLabels }}{{ $labels = merge (deepCopy .) $labels }}{{ end }}
{{- $_ := set $v "podLabels" $labels }}
{{- $env := $v.extraEnv | default list }}
{{- with $d.gomaxprocsOverride }}{{ $env = append $env (dict "name" "GOMAXPROCS" "value" (toString .)) }}{{ end }}
{{- with $d.gomemlimitOverride }}
{{- $env = append $env (dict "name" "GOMEMLIMIT" "value" (toString .)) }}
{{- $_ := set $v "goMemLimitPercent" 0 }}
{{- end }}
{{- with $d.env }}
{{- range $name, $value := .open | default dict }}{{ if $value }}{{ $env = append $env (dict "name" $name "value" (toString $value)) }}{{ end }}{{ end }}
{{- range $name, $path := .field | default dict }}{{ if $path }}{{ $env = append $env (dict "name" $name "valueFrom" (dict "fieldRef" (dict "fieldPath" $path))) }}{{ end }}{{ end }}
{{- range $secret, $keys := .existing | default dict }}
{{- range $name, $key := $keys | default dict }}{{ if $name }}{{ $env = append $env (dict "name" $name "valueFrom" (dict "secretKeyRef" (dict "name" $secret "key" $key))) }}{{ end }}{{ end }}
{{- end }}
{{- range $name, $value := .secret | default dict }}{{ if $value }}{{ $notes = append $notes (printf "reloader.deployment.env.secret.%s: not set; this chart creates no Secret from values. Put the value in a Secret of yours and name it in reloader.deployment.env.existing (or alerts.urlSecret)." $name) }}{{ end }}{{ end }}
{{- end }}
{{- $_ := set $v "extraEnv" $env }}
{{- with $r.rbac }}
{{- if hasKey . "enabled" }}{{ $_ := set $v.rbac "create" .enabled }}{{ end }}
{{- if .labels }}{{ $notes = append $notes "reloader.rbac.labels: not applied; Reroll's RBAC objects carry the chart's labels." }}{{ end }}
{{- end }}
{{- with $r.serviceAccount }}
{{- if hasKey . "create" }}{{ $_ := set $v.serviceAccount "create" .create }}{{ end }}
{{- with .name }}{{ $_ := set $v.serviceAccount "name" . }}{{ end }}
{{- with .annotations }}{{ $_ := set $v.serviceAccount "annotations" . }}{{ end }}
{{- if .labels }}{{ $notes = append $notes "reloader.serviceAccount.labels: not applied; the ServiceAccount carries the chart's labels." }}{{ end }}
{{- end }}
{{- range $kind := list "serviceMonitor" "podMonitor" }}
{{- with get $r $kind }}
{{- $m := get $v $kind }}
{{- if hasKey . "enabled" }}{{ $_ := set $m "enabled" .enabled }}{{ end }}
{{- range $from, $to := dict "namespace" "namespace" "labels" "labels" "interval" "interval" "timeout" "scrapeTimeout" }}
{{- with get $.Values.reloader $kind }}{{ with get . $from }}{{ $_ := set $m $to . }}{{ end }}{{ end }}
{{- end }}
{{- range $key := list "annotations" "metricRelabelings" "relabelings" "targetLabels" "podTargetLabels" "tlsConfig" "scheme" "bearerTokenFile" "bearerTokenSecret" }}
{{- with get $.Values.reloader $kind }}{{ if get . $key }}{{ $notes = append $notes (printf "reloader.%s.%s: not offered; the %s scrapes the metrics port over HTTP with honorLabels." $kind $key (title $kind)) }}{{ end }}{{ end }}
{{- end }}
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
{{- with .to }}{{ $_ := set $v.networkPolicy "extraEgress" (append ($v.networkPolicy.extraEgress | default list) (dict "to" . "ports" (list (dict "port" 443 "protocol" "TCP")))) }}{{ end }}
{{- end }}
{{- /* global.imagePullSecrets: names or {name: ...}, as Reloader takes them. */}}
{{- if and (not $v.imagePullSecrets) ($v.global | default dict).imagePullSecrets }}
{{- $secrets := list }}
{{- range $v.global.imagePullSecrets }}{{ if kindIs "string" . }}{{ $secrets = append $secrets (dict "name" .) }}{{ else }}{{ $secrets = append $secrets . }}{{ end }}{{ end }}
{{- $_ := set $v "imagePullSecrets" $secrets }}
{{- end }}
{{- /* Reloader's image is never Reroll's: the image block of a Reloader file is dropped. */}}
{{- if or $v.image.name (contains "stakater/reloader" (toString $v.image.repository)) }}
{{- $notes = append $notes "image: Reloader's image values are not used; Reroll runs its own image (image.repository, image.tag)." }}
{{- $_ := set $v "image" (dict "repository" "ghcr.io/reroll/reroll" "tag" "" "digest" "" "pullPolicy" ($v.image.pullPolicy | default "IfNotPresent")) }}
{{- end }}
{{- with ($v.global | default dict).imageRegistry }}{{ $notes = append $notes "global.imageRegistry: not used; set image.repository to Reroll's image in your registry." }}{{ end }}
{{- /* Keys that mean nothing here, noted only when set to something other than Reloader's default. */}}
{{- if $r.isOpenshift }}{{ $notes = append $notes "reloader.isOpenshift: not needed; DeploymentConfigs are rolled whenever the API server serves apps.openshift.io/v1." }}{{ end }}
{{- if $r.syncAfterRestart }}{{ $notes = append $notes "reloader.syncAfterRestart: not needed; Reroll always rolls, once, exactly the changes made while it was not running." }}{{ end }}
{{- if $r.readOnlyRootFileSystem }}{{ $notes = append $notes "reloader.readOnlyRootFileSystem: not needed; Reroll's root filesystem is always read-only." }}{{ end }}
{{- if ($r.legacy | default dict).rbac }}{{ $notes = append $notes "reloader.legacy.rbac: not offered; the RBAC rules are generated from Reroll's code." }}{{ end }}
{{- if $r.enableMetricsByNamespace }}{{ $notes = append $notes "reloader.enableMetricsByNamespace: not needed; reroll_rollouts_total always has a namespace label." }}{{ end }}
{{- if $r.service }}{{ $notes = append $notes "reloader.service: not applied; the metrics Service is created with serviceMonitor.enabled." }}{{ end }}
{{- if ($r.verticalPodAutoscaler | default dict).enabled }}{{ $notes = append $notes "reloader.verticalPodAutoscaler: not offered; Reroll's memory is flat in the cluster's Secrets (docs/design.md)." }}{{ end }}
{{- if $d.image }}{{ $notes = append $notes "reloader.deployment.image: Reloader's image values are not used; Reroll runs its own image (image.repository, image.tag)." }}{{ end }}
{{- if or $r.volumes $r.volumeMounts }}{{ $notes = append $notes "reloader.volumes/volumeMounts: not used, as in Reloader's chart, which reads reloader.deployment.volumes and volumeMounts." }}{{ end }}
{{- if or $d.livenessProbe $d.readinessProbe }}{{ $notes = append $notes "reloader.deployment.livenessProbe/readinessProbe: not applied; Reroll's probes are /healthz and /readyz on port 8081." }}{{ end }}
{{- if kindIs "bool" $d.automountServiceAccountToken }}{{ $notes = append $notes "reloader.deployment.automountServiceAccountToken: not applied; Reroll needs its ServiceAccount token." }}{{ end }}
{{- if and $r.enableHA (le (int ($d.replicas | default 1)) 1) }}{{ $notes = append $notes "reloader.enableHA with one replica: leader election is on only with more than one replica." }}{{ end }}
{{- with $v.kubernetes }}{{ if and .host (ne .host "https://kubernetes.default") }}{{ $notes = append $notes "kubernetes.host: not used; Reroll uses the in-cluster configuration." }}{{ end }}{{ end }}
{{- with $v.namespace }}{{ $notes = append $notes (printf "namespace %s: not used; Reroll is installed in the release namespace (--namespace)." .) }}{{ end }}
{{- $_ := set $v "__reloaderNotes" $notes }}
{{- end }}
{{- end }}
