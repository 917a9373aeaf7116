# Reroll's developer commands. `make help` lists them.
SHELL := /usr/bin/env bash
.DEFAULT_GOAL := help

GO ?= go
# Go test timeout for the whole run; CI's limit is 90 minutes.
TEST_TIMEOUT ?= 30m
CLUSTER_DIR ?= .run/cluster

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build the reroll controller and the kubectl plugin into bin/reroll and bin/kubectl-reroll (with its completion shim bin/kubectl_complete-reroll), as releases are built (hack/build.sh).
	hack/build.sh bin/reroll ./cmd/reroll
	hack/build.sh bin/kubectl-reroll ./cmd/kubectl-reroll
	install -m 0755 plugins/kubectl_complete-reroll bin/kubectl_complete-reroll

# The release: the VERSION file, which the binaries, the image, the chart's
# appVersion and the krew manifest carry; see docs/release.md.
VERSION ?= $(shell cat VERSION)

.PHONY: image
image: ## Build the controller image (linux/amd64, linux/arm64) without a container engine into dist/reroll-image_$(VERSION).tar.
	VERSION=$(VERSION) hack/image.sh

.PHONY: image-check
image-check: image ## Build the image, test its builder, and run the binary extracted from it (what CI runs).
	$(GO) -C hack/image vet ./...
	$(GO) -C hack/image test -count=1 ./...
	.run/image/image extract -archive dist/reroll-image_$(VERSION).tar -platform linux/$$($(GO) env GOARCH) -file /reroll -out .run/image/extracted
	@out=$$(.run/image/extracted --version); echo "$$out"; \
	  [[ $$out == "reroll $(VERSION) (commit $$(git rev-parse HEAD)"* ]] || { echo "the image's binary does not say $(VERSION) and this commit" >&2; exit 1; }

# The plugin's platforms: every one a release ships (docs/release.md).
KREW_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64

.PHONY: krew-manifest
krew-manifest: ## Build kubectl-reroll archives into dist/ and render the krew manifest dist/krew/reroll.yaml for VERSION.
	VERSION=$(VERSION) hack/krew.sh $(KREW_PLATFORMS)

.PHONY: release
release: ## Build every release artifact of VERSION into dist/ with SHA256SUMS: image, plugin archives, krew manifest, chart, one-file manifest.
	VERSION=$(VERSION) hack/release.sh

.PHONY: tools
tools: ## Build the local control plane's binaries into bin/ (cached by version; ~10 min the first time).
	hack/tools.sh etcd kube kwok helm

.PHONY: demo
demo: ## Start a local control plane and Reroll, edit a ConfigMap, watch the rollout, stop everything.
	hack/demo.sh

.PHONY: test
test: ## Run every test: unit tests and the controller against a real local control plane.
	hack/tools.sh etcd kube kwok
	$(GO) vet ./...
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

.PHONY: test-e2e
test-e2e: ## Run the end-to-end tests: the Helm chart, the Kustomize manifests and the built binary on a local control plane.
	hack/tools.sh etcd kube kwok helm controller-gen helm-docs
	$(GO) vet -tags e2e ./test/...
	$(GO) test -tags e2e -count=1 -timeout 10m ./test/e2e/
	cd test/rules && $(GO) vet ./... && $(GO) test -count=1 ./...
	$(MAKE) bench-check

.PHONY: bench-webhook
bench-webhook: ## Measure the admission webhook's answer to a replace (Go benchmark; no API call on that path).
	hack/tools.sh etcd kube kwok
	$(GO) test -run '^$$' -bench WorkloadAdmission -benchmem ./internal/controller/

.PHONY: bench-validate
bench-validate: ## Measure the validation of one change: a 1 MiB ConfigMap against a JSON Schema and a CEL rule, p50 and p99 (Go benchmark, no cluster).
	$(GO) test -run '^$$' -bench 'Evaluate_1MiBConfigMap' -benchmem -benchtime 200x ./internal/validate/

.PHONY: bench-check
bench-check: ## Run the built binary through the small bench profile and fail on wrong behaviour (never on timings).
	$(MAKE) bench PROFILE=small BENCH_FLAGS="-check -designs=false"

# Packages whose TestMain starts the local control plane. Of the first four,
# `make test-unit` runs the tests of their *_unit_test.go files with -unit,
# which leaves the plane off (test/unitonly); it runs every other package whole.
PLANE_UNIT_PKGS := internal/controller internal/projection internal/cli internal/metricsauth
PLANE_ONLY_PKGS := internal/store internal/state test/controlplane test/e2e

# How many seeds `make soak` runs, from which, and how many at once.
SEEDS ?= 1000
FIRST_SEED ?= 1
SOAK_PARALLEL ?= 10

.PHONY: soak
soak: ## Run the model-based test of first sight and coalescing (no change lost) over SEEDS seeds from FIRST_SEED; REROLL_SEED=n replays one.
	hack/tools.sh etcd kube kwok
	REROLL_MODEL_SEEDS=$(SEEDS) REROLL_MODEL_FIRST_SEED=$(FIRST_SEED) REROLL_MODEL_PARALLEL=$(SOAK_PARALLEL) \
	  $(GO) test -count=1 -timeout 0 -run 'TestWorkloadReconciler_ModelNoChangeLost' ./internal/controller/

.PHONY: test-unit
test-unit: ## Run only the tests that need no control plane (seconds).
	$(GO) test -count=1 $$($(GO) list ./... | grep -v -E '/($(subst $() ,|,$(strip $(PLANE_UNIT_PKGS) $(PLANE_ONLY_PKGS))))$$')
	$(GO) test -count=1 $(addprefix ./,$(addsuffix /,$(PLANE_UNIT_PKGS))) -args -unit

.PHONY: manifests
manifests: ## Regenerate config/rbac/role.yaml from the RBAC markers, the CRDs and deepcopy functions from api/, and deploy/reroll.yaml from config/default.
	hack/manifests.sh

.PHONY: docs
docs: ## Regenerate docs/flags.md from the flags in the code, the Reloader values table from charts/reroll/files/reloader-keys.yaml, and the plugin's copies of that table and of the chart's values.schema.json.
	UPDATE_DOCS=1 $(GO) test -count=1 -run TestFlagsDoc ./cmd/reroll/
	UPDATE_DOCS=1 $(GO) test -count=1 -run 'TestKeysYAMLIsTheChartsTable|TestSchemaJSONIsTheChartsSchema|TestMarkdownIsInTheMigrationGuide' ./internal/reloaderchart/

# helm-docs' arguments; test/e2e (TestHelmChart_READMEUpToDate) runs the same.
HELM_DOCS_ARGS := --chart-search-root=charts --sort-values-order=file --skip-version-footer

.PHONY: chart-docs
chart-docs: ## Regenerate charts/reroll/README.md from the "# --" comments of values.yaml (helm-docs).
	hack/tools.sh helm-docs
	"$$(hack/tools.sh --dir helm-docs)/helm-docs" $(HELM_DOCS_ARGS)

# The bench's profile: small (seconds to create), large (10,000 Secrets), fanout (2,000 Deployments read one ConfigMap), xl (100,000 Secrets, 10,000 Deployments), safety (500 Deployments share one Secret, --max-concurrent-rollouts=20), fairness (one namespace's 1,000 Deployments roll while another's single change waits) or settled (1,520 Deployments settled by kube-controller-manager before Reroll starts).
PROFILE ?= small
BENCH_DIR ?= .run/bench
# Another controller's binary (e.g. Stakater Reloader, built from its own
# source outside this repository) to run side by side with Reroll on the same
# profile, its name in the output and its arguments; see docs/benchmarks.md.
BENCH_PEER ?=
BENCH_PEER_NAME ?=
BENCH_PEER_ARGS ?=

.PHONY: bench
bench: ## Measure Reroll at scale on a local etcd+kube-apiserver (PROFILE=small|large|fanout|xl|safety|fairness|settled; BENCH_PEER=path runs another controller side by side); see docs/benchmarks.md.
	hack/tools.sh etcd kube
	@mkdir -p $(BENCH_DIR)
	hack/build.sh $(BENCH_DIR)/reroll ./cmd/reroll
	$(GO) build -o $(BENCH_DIR)/bench ./hack/bench
	$(BENCH_DIR)/bench -profile $(PROFILE) -reroll $(BENCH_DIR)/reroll -dir $(BENCH_DIR) \
		-peer "$(BENCH_PEER)" -peer-name "$(BENCH_PEER_NAME)" -peer-args "$(BENCH_PEER_ARGS)" $(BENCH_FLAGS)

# How long `make fuzz` runs each fuzz target.
FUZZTIME ?= 10s

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 10s); plain `go test` runs only their seeds.
	@set -e; grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' cmd internal | sort -u | \
	while IFS=: read -r file fn; do \
	  target=$${fn#func }; pkg=./$$(dirname $$file)/; \
	  echo "fuzzing $$target in $$pkg"; \
	  $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

.PHONY: lint
lint: ## Check formatting and run go vet.
	@out=$$(gofmt -l cmd internal hack test); if [[ -n "$$out" ]]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

.PHONY: cluster-up
cluster-up: ## Start a local control plane that stays up; prints the KUBECONFIG to export.
	hack/tools.sh etcd kube kwok
	$(GO) build -o bin/controlplane ./hack/controlplane
	bin/controlplane up --dir $(CLUSTER_DIR) --full

.PHONY: cluster-down
cluster-down: ## Stop the control plane started by cluster-up.
	$(GO) build -o bin/controlplane ./hack/controlplane
	bin/controlplane down --dir $(CLUSTER_DIR)
