#!/usr/bin/env bash
# `make demo`: Reroll on a real local control plane, start to finish.
#
# Builds what is missing, starts etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kwok (fake nodes and pods), runs Reroll as a local
# process, applies examples/reroll-demo.yaml, edits the ConfigMap, and shows
# the rollout Reroll triggered. Then it shows that a label-only edit rolls
# nothing, and runs the kubectl plugin: `kubectl reroll who-uses` and
# `kubectl reroll plan` on the demo's objects. The second act applies
# examples/projection-harbor.yaml, rotates its Secret and shows the custom
# resource's field follow. The third act applies examples/versioned-config.yaml,
# changes its ConfigMap, runs `kubectl rollout undo` and shows the pods read
# the older copy's content again. It stops everything it started and exits
# 0 only if every step was observed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dir="$root/.run/demo"
ns=reroll-demo

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
fail() { printf '\n\033[31mdemo failed: %s\033[0m\n' "$*" >&2; exit 1; }

step "Building the control plane's binaries (only what is missing; the first build takes ~10 minutes)"
hack/tools.sh etcd kube kwok
# The kubectl built beside the control plane matches its version exactly.
PATH="$(hack/tools.sh --dir kube):$PATH"
step "Building Reroll and its kubectl plugin"
go build -o bin/reroll ./cmd/reroll
go build -o bin/kubectl-reroll ./cmd/kubectl-reroll
# kubectl finds plugins on PATH: bin/kubectl-reroll is `kubectl reroll`.
PATH="$root/bin:$PATH"
go build -o bin/controlplane ./hack/controlplane

reroll_pid=""
cleanup() {
  local rc=$?
  step "Stopping everything the demo started"
  if [[ -n "$reroll_pid" ]] && kill -0 "$reroll_pid" 2>/dev/null; then
    kill "$reroll_pid" && wait "$reroll_pid" 2>/dev/null || true
  fi
  bin/controlplane down --dir "$dir" || true
  if [[ $rc -ne 0 && -f "$dir.reroll.log" ]]; then
    echo "Reroll's log (last 30 lines):"; tail -n 30 "$dir.reroll.log"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "Starting the local control plane"
bin/controlplane down --dir "$dir" >/dev/null 2>&1 || true   # a previous demo that was killed
eval "$(bin/controlplane up --dir "$dir" --full | tail -n 1)"
kubectl get nodes

step "Starting Reroll (a local process using the generated kubeconfig)"
# The Projection CRD, for the second act.
kubectl apply --server-side -f config/crd/bases/reroll.dev_projections.yaml
kubectl wait crd/projections.reroll.dev --for=condition=Established --timeout=60s
# Outside a pod there is no POD_NAMESPACE: keep the digest key in default.
# --log-level=debug only so that the demo can see first sight in the log
# (Reroll writes nothing to a workload on first sight).
bin/reroll --kubeconfig "$KUBECONFIG" --metrics-bind-address=0 --health-probe-bind-address=0 --digest-key-namespace=default \
  --enable-projections --log-level=debug >"$dir.reroll.log" 2>&1 &
reroll_pid=$!
echo "reroll pid $reroll_pid, log in $dir.reroll.log"

step "Applying examples/reroll-demo.yaml"
kubectl apply -f examples/reroll-demo.yaml
kubectl -n $ns rollout status deployment/web --timeout=120s
# First sight: Reroll takes what the Deployment consumes now as its
# baseline, in memory, and writes nothing to the Deployment.
for _ in $(seq 1 120); do
  grep 'Took consumed data as baseline on first sight' "$dir.reroll.log" | grep -q '"name":"web"' && break
  sleep 0.5
done
grep 'Took consumed data as baseline on first sight' "$dir.reroll.log" | grep -q '"name":"web"' ||
  fail "Reroll did not take the Deployment's baseline on first sight"
kubectl -n $ns get deployment web -o jsonpath='{.metadata.annotations}' | grep -q 'reroll\.dev/' &&
  fail "first sight wrote to the Deployment"
echo "Reroll took what the Deployment consumes as its baseline, in memory: it wrote nothing to the Deployment"
echo "(generation $(kubectl -n $ns get deployment web -o jsonpath='{.metadata.generation}'), no reroll.dev/ annotation)."
old_rs=$(kubectl -n $ns get rs -l app=web -o jsonpath='{.items[0].metadata.name}')
[[ $(kubectl -n $ns get rs -l app=web -o name | wc -l) -eq 1 ]] || fail "first sight rolled the Deployment"

step "Editing the ConfigMap: LOG_LEVEL info -> debug"
kubectl -n $ns patch configmap app-config --type merge -p '{"data":{"LOG_LEVEL":"debug"}}'
# The Deployment opted in with Reloader's annotation, so Reroll writes
# Reloader's own trigger: the pod template annotation last-reloaded-from.
trigger_path='{.spec.template.metadata.annotations.reloader\.stakater\.com/last-reloaded-from}'
kubectl -n $ns wait deployment/web --for=jsonpath="$trigger_path" --timeout=60s >/dev/null ||
  fail "Reroll did not roll the Deployment"
kubectl -n $ns rollout status deployment/web --timeout=120s

echo "Reroll recorded, with the rollout, on the Deployment's metadata what it consumes:"
kubectl -n $ns get deployment web -o jsonpath='{.metadata.annotations.reroll\.dev/observed}' | sed 's/^/  /'; echo
# The digests are keyed (HMAC-SHA-256 under the installation key in Secret
# default/reroll-digest-key): someone who can read the Deployment cannot test
# guesses of the password against them.
plain=$(printf '%s' correct-horse | sha256sum | cut -c1-16)
[[ -n $(kubectl -n $ns get deployment web -o jsonpath='{.metadata.annotations.reroll\.dev/observed}') ]] ||
  fail "the rollout wrote no record"
kubectl -n $ns get deployment web -o jsonpath='{.metadata.annotations.reroll\.dev/observed}' | grep -q "$plain" &&
  fail "the record holds the plain SHA-256 of the password"
echo "The password's digest is keyed: not its plain SHA-256 prefix $plain (key id $(kubectl -n $ns get deployment web -o jsonpath='{.metadata.annotations.reroll\.dev/observed-key}'))."

step "What happened"
echo "ReplicaSets (the old one scaled to 0, the new one runs 3 pods):"
kubectl -n $ns get rs -l app=web -o custom-columns='NAME:.metadata.name,DESIRED:.spec.replicas,READY:.status.readyReplicas'
new_rs=$(kubectl -n $ns get rs -l app=web -o jsonpath='{range .items[?(@.spec.replicas>0)]}{.metadata.name}{end}')
[[ -n "$new_rs" && "$new_rs" != "$old_rs" ]] || fail "no new ReplicaSet"
echo "old ReplicaSet: $old_rs   new ReplicaSet: $new_rs"
echo
echo "The trigger Reroll wrote on the pod template (Reloader's format; the hash is Reloader's SHA-1 of app-config):"
echo "  reloader.stakater.com/last-reloaded-from: $(kubectl -n $ns get deployment web -o jsonpath="$trigger_path")"
echo
echo "The Event Reroll recorded on the Deployment:"
kubectl -n $ns get events --field-selector involvedObject.name=web,reason=Rolled -o custom-columns='TYPE:.type,REASON:.reason,MESSAGE:.message'
msg=$(kubectl -n $ns get events --field-selector involvedObject.name=web,reason=Rolled -o jsonpath='{.items[*].message}')
[[ "$msg" == *"ConfigMap/app-config changed keys LOG_LEVEL"* ]] || fail "no Rolled Event naming the changed key"
echo
echo "Keys that changed: ${msg##*changed keys }"

step "A label-only edit of the ConfigMap, and an edit of a Secret key the pods do not read: nothing rolls"
hash_before=$(kubectl -n $ns get deployment web -o jsonpath="$trigger_path")
# A Deployment's generation rises with every write to its spec or annotations.
gen_before=$(kubectl -n $ns get deployment web -o jsonpath='{.metadata.generation}')
kubectl -n $ns label configmap app-config team=payments
kubectl -n $ns patch secret db-credentials --type merge -p '{"stringData":{"username":"someone-else"}}'
echo "waiting 5 seconds for anything to happen..."
sleep 5
hash_after=$(kubectl -n $ns get deployment web -o jsonpath="$trigger_path")
gen_after=$(kubectl -n $ns get deployment web -o jsonpath='{.metadata.generation}')
[[ "$hash_before" == "$hash_after" ]] || fail "the label-only edit rolled the Deployment"
[[ "$gen_before" == "$gen_after" ]] || fail "Reroll wrote to the Deployment after a label-only edit"
[[ $(kubectl -n $ns get rs -l app=web -o name | wc -l) -eq 2 ]] || fail "a new ReplicaSet appeared"
echo "pod template unchanged, the Deployment was not written to, still 2 ReplicaSets."

# Reroll runs here as a local process, not as a Deployment the plugin could
# find: tell the plugin where its digest key Secret is (the installation
# time that the first-sight rule reads), and not to look for a Deployment.
kr_flags="--discover=false --digest-key-secret=default/reroll-digest-key"
step "kubectl reroll who-uses: which workloads read app-config and db-credentials, how, and which keys roll them"
echo "$ kubectl reroll $kr_flags -n $ns who-uses configmap/app-config"
kubectl reroll $kr_flags -n $ns who-uses configmap/app-config
echo
echo "$ kubectl reroll $kr_flags -n $ns who-uses secret/db-credentials -o wide"
uses=$(kubectl reroll $kr_flags -n $ns who-uses secret/db-credentials -o wide)
echo "$uses"
[[ "$uses" == *"Deployment/web"*"env(web)"*"password"*"yes"* ]] || fail "who-uses did not find the Deployment reading db-credentials"

step "kubectl reroll plan: what a pull request changing GREETING and the database username would roll, before it is applied"
plan_file="$dir.plan.yaml"
cat >"$plan_file" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  namespace: reroll-demo
data:
  LOG_LEVEL: debug
  GREETING: bonjour        # changed: web reads every key through envFrom
  app.yaml: |
    listen: ":8080"
---
apiVersion: v1
kind: Secret
metadata:
  name: db-credentials
  namespace: reroll-demo
stringData:
  password: correct-horse
  username: someone-new    # changed: web does not read this key
YAML
echo "$ kubectl reroll $kr_flags plan -f $(basename "$plan_file")"
plan=$(kubectl reroll $kr_flags plan -f "$plan_file")
echo "$plan"
[[ "$plan" == *"Deployment/web"*"yes"*"ConfigMap/app-config changed keys GREETING"* ]] || fail "plan did not predict the rollout of web"
rc=0
kubectl reroll $kr_flags plan -f "$plan_file" --fail-on-rollout >/dev/null || rc=$?
echo "with --fail-on-rollout, for a CI check: exit status $rc"
[[ $rc -eq 1 ]] || fail "plan --fail-on-rollout exited $rc, want 1 (as kubectl diff)"
[[ $(kubectl -n $ns get configmap app-config -o jsonpath='{.data.GREETING}') == hello ]] || fail "plan changed the ConfigMap"

step "Second act: a Projection keeps a custom resource's inline S3 access key equal to a Secret (examples/projection-harbor.yaml)"
example=examples/projection-harbor.yaml
# The example's first document is the HarborCluster-shaped CRD: established
# before the custom resource is applied.
awk '/^---$/{exit} {print}' "$example" | kubectl apply -f -
kubectl wait crd/harborclusters.example.reroll.dev --for=condition=Established --timeout=60s
kubectl apply -f "$example"
access_key='{.spec.storage.spec.s3.accessKey}'
kubectl -n harbor wait harborcluster/harbor --for=jsonpath="$access_key"=AKIA-FIRST --timeout=60s >/dev/null ||
  fail "the Projection did not write the access key"
kubectl -n harbor get projection harbor-s3
echo "spec.storage.spec.s3.accessKey: $(kubectl -n harbor get harborcluster harbor -o jsonpath="$access_key")"

step "Rotating the Secret: accessKey AKIA-FIRST -> AKIA-SECOND"
kubectl -n harbor patch secret harbor-s3 --type merge -p '{"stringData":{"accessKey":"AKIA-SECOND"}}'
kubectl -n harbor wait harborcluster/harbor --for=jsonpath="$access_key"=AKIA-SECOND --timeout=60s >/dev/null ||
  fail "the Projection did not write the rotated access key"
echo "spec.storage.spec.s3.accessKey: $(kubectl -n harbor get harborcluster harbor -o jsonpath="$access_key")"
echo "Who owns it (server-side apply field managers of the HarborCluster):"
kubectl -n harbor get harborcluster harbor -o jsonpath='{range .metadata.managedFields[*]}  {.manager} ({.operation}){"\n"}{end}'
echo "The Events on the HarborCluster:"
kubectl -n harbor get events --field-selector involvedObject.kind=HarborCluster,reason=Written -o custom-columns='TYPE:.type,REASON:.reason,MESSAGE:.message'
echo "$ kubectl reroll $kr_flags -n harbor who-uses secret/harbor-s3"
uses=$(kubectl reroll $kr_flags -n harbor who-uses secret/harbor-s3)
echo "$uses"
[[ "$uses" == *"Projection/harbor-s3"*"writes HarborCluster/harbor"* ]] || fail "who-uses did not name the Projection that reads harbor-s3"

step "Third act: versioned config, an undo brings the old content back (examples/versioned-config.yaml)"
vns=reroll-versioned
envfrom='{.spec.template.spec.containers[0].envFrom[0].configMapRef.name}'
# pinned prints the copy of app-config that the Deployment's template names,
# once it names one (not the source itself).
pinned() {
  local name=""
  for _ in $(seq 1 120); do
    name=$(kubectl -n $vns get deployment web -o jsonpath="$envfrom")
    [[ -n "$name" && "$name" != app-config && "$name" != "${1:-}" ]] && { echo "$name"; return 0; }
    sleep 0.5
  done
  return 1
}
# pods_read prints, once, the ConfigMaps that the running pods of web name.
pods_read() {
  kubectl -n $vns get pods -l app=web -o jsonpath='{range .items[*]}{.spec.containers[0].envFrom[0].configMapRef.name}{"\n"}{end}' | sort -u
}
# settle waits until every running pod of web reads copy $1.
settle() {
  kubectl -n $vns rollout status deployment/web --timeout=120s >/dev/null
  for _ in $(seq 1 120); do
    [[ "$(pods_read)" == "$1" ]] && return 0
    sleep 0.5
  done
  fail "the pods of web do not all read $1: $(pods_read | tr '\n' ' ')"
}
color_of() { kubectl -n $vns get configmap "$1" -o jsonpath='{.data.COLOR}'; }

kubectl apply -f examples/versioned-config.yaml
# A versioned workload is pinned on first sight, so that the very first
# undo already restores content: its template names a copy of app-config.
blue=$(pinned) || fail "Reroll did not pin web to a copy of app-config"
settle "$blue"
echo "web's pods read $blue, an immutable copy of app-config made by Reroll: COLOR=$(color_of "$blue")"
[[ $(color_of "$blue") == blue ]] || fail "the first copy does not hold blue"

step "Changing app-config: COLOR blue -> green"
kubectl -n $vns patch configmap app-config --type merge -p '{"data":{"COLOR":"green"}}'
green=$(pinned "$blue") || fail "Reroll did not roll web to a copy of the new content"
settle "$green"
echo "web rolled; its pods read $green: COLOR=$(color_of "$green")"
[[ $(color_of "$green") == green ]] || fail "the new copy does not hold green"
echo "The copies (one per content; the source app-config itself is never written):"
kubectl -n $vns get configmaps -l reroll.dev/copy-of=app-config -o custom-columns='NAME:.metadata.name,COLOR:.data.COLOR,IMMUTABLE:.immutable'
echo
echo "$ kubectl reroll $kr_flags -n $vns why deployment/web"
kubectl reroll $kr_flags -n $vns why deployment/web | grep -E '^(Workload|Pinned):'

step "Green is bad: kubectl rollout undo deployment/web"
kubectl -n $vns rollout undo deployment/web
settle "$blue"
gen=$(kubectl -n $vns get deployment web -o jsonpath='{.metadata.generation}')
echo "web's pods read $blue again: COLOR=$(color_of "$blue"), while app-config holds COLOR=$(color_of app-config)"
[[ $(color_of "$blue") == blue && $(color_of app-config) == green ]] || fail "the undo did not bring blue back"
# The undo is the user's choice: Reroll does not roll web forward to green
# again until app-config changes again. The undo was the last write.
echo "waiting 5 seconds for anything to happen..."
sleep 5
[[ $(kubectl -n $vns get deployment web -o jsonpath="$envfrom") == "$blue" ]] || fail "Reroll rolled web forward after the undo"
[[ $(kubectl -n $vns get deployment web -o jsonpath='{.metadata.generation}') == "$gen" ]] ||
  fail "something wrote web's spec after the undo"
[[ "$(pods_read)" == "$blue" ]] || fail "a pod of web reads something else than $blue after the undo"
echo "Reroll left web on blue: no write since the undo, every pod on $blue."
echo "$ kubectl reroll $kr_flags -n $vns why deployment/web"
why=$(kubectl reroll $kr_flags -n $vns why deployment/web)
echo "$why" | grep -E '^(Workload|Pinned):'
[[ "$why" == *"Pinned:    ConfigMap/app-config to copy $blue"*"source now: moved on"* ]] ||
  fail "why does not say that web is pinned to $blue while app-config moved on"

step "Demo complete: one data change, one rollout; metadata changes and unread keys, none; the plugin says so before you apply; a rotated Secret, a rewritten custom resource field; an undo that brings the old content back"
