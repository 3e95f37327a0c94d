# `make test` and `make run` are all a newcomer needs; see README.md.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
BIN     := bin/reloader
# The same flags as the Dockerfile, so the binary tested here is the one shipped.
BUILD_FLAGS := -trimpath -ldflags "-s -w -X main.version=$(VERSION)"

.PHONY: all build install-kubectl-plugin tools test test-unit check lint run demo bench soak clean image push registry-set release test-matrix docs

all: build

build:
	CGO_ENABLED=0 $(GO) build $(BUILD_FLAGS) -o $(BIN) .

# Builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok from the pinned
# modules under tools/ into the user cache (first run only, a few minutes).
tools:
	$(GO) run ./internal/dev/testcluster/cmd/testbin

# Go tools pinned by the modules under tools/, built once into the user cache under a name that
# holds the hash of their module's go.sum, so bumping the pin rebuilds them.
TOOLS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/reloader/tools
tool = $(TOOLS_CACHE)/$(1)-$(shell cat tools/$(2)/go.mod tools/$(2)/go.sum | sha256sum | cut -c1-12)
CRANE         := $(call tool,crane,image)
GOLANGCI_LINT := $(call tool,golangci-lint,golangci-lint)
ACTIONLINT    := $(call tool,actionlint,actionlint)
$(CRANE):         PKG := github.com/google/go-containerregistry/cmd/crane
$(CRANE):         MOD := image
$(GOLANGCI_LINT): PKG := github.com/golangci/golangci-lint/v2/cmd/golangci-lint
$(GOLANGCI_LINT): MOD := golangci-lint
$(ACTIONLINT):    PKG := github.com/rhysd/actionlint/cmd/actionlint
$(ACTIONLINT):    MOD := actionlint
$(CRANE) $(GOLANGCI_LINT) $(ACTIONLINT):
	@mkdir -p $(TOOLS_CACHE)
	@echo "building $(notdir $@) from tools/$(MOD) (first run only)"
	cd tools/$(MOD) && GOWORK=off $(GO) build -o $@.tmp-$$$$ $(PKG) && mv $@.tmp-$$$$ $@

check:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	@sh internal/dev/check-links.sh

# golangci-lint (.golangci.yml) over the module, actionlint over .github/workflows.
lint: $(GOLANGCI_LINT) $(ACTIONLINT)
	$(GOLANGCI_LINT) run --allow-parallel-runners ./...
	$(ACTIONLINT)

# The packages whose tests start no control plane (a package that starts one has its own, e.g.
# state/integration); test-unit refuses one that links the test cluster. make test runs them too.
UNIT_PACKAGES := . ./alert/ ./coalesce/ ./confighash/ ./internal/app/ ./internal/cli/ ./internal/gctune/ \
	./internal/kube/ ./internal/leader/ ./internal/pageout/ ./metrics/ ./policy/ ./state/ \
	./reloader/configs/ ./reloader/internal/arrivals/ ./reloader/internal/entrykeys/ \
	./reloader/internal/report/ ./reloader/jobs/ ./reloader/runs/ ./reloader/safe/ ./reloader/workload/ ./e2e/checker/
test-unit:
	@! $(GO) list -deps -test $(UNIT_PACKAGES) | grep -x '.*/internal/dev/testcluster' || \
		{ echo "a package in UNIT_PACKAGES links internal/dev/testcluster"; exit 1; }
	$(GO) test -count=1 $(UNIT_PACKAGES)

# The tests mostly wait on a control plane, so many run at once (-parallel), on 2 cores too, and
# so do the packages that start one (-p): the longest, reloader/, bounds the run.
test: tools build check lint
	$(GO) test -count=1 -timeout 30m -p 4 -parallel 8 ./...

# PORT is the reloader's /metrics and health port; make run checks it is free before starting.
PORT ?= 8080
run: tools build
	$(GO) run ./internal/dev/devenv -reloader $(BIN) -port $(PORT)

demo: tools build
	$(GO) run ./internal/dev/devenv -reloader $(BIN) -demo

# Measures bin/reloader on a local control plane (under 15 minutes) and writes
# bench-results/<timestamp>.jsonl; e.g. BENCH_FLAGS="-scenarios latency,burst".
bench: tools build
	$(GO) run ./internal/dev/bench -reloader $(BIN) $(BENCH_FLAGS)

# Runs random sequences of edits and faults on a local control plane for DURATION, prints each
# sequence's outcome and the totals (sequences, actions, faults, violations), and keeps the whole
# log in bin/soak/ (RELIABILITY.md; a log worth keeping is copied to docs/lab/soak-logs/).
DURATION ?= 10m
soak: tools
	@mkdir -p bin/soak
	@log=bin/soak/$$(date -u +%Y%m%dT%H%M%SZ).log; echo "full log: $$log"; \
	$(GO) test -count=1 -timeout 0 -run '^TestSoak$$' -v ./e2e -args -soak=$(DURATION) > $$log 2>&1; rc=$$?; \
	grep -E '^\s+checker_test.go:[0-9]+: (seed|soak)|^\s+(lost|excess):|^\s+[0-9]+\. |^(ok|FAIL)' $$log; exit $$rc

# The integration suites on each Kubernetes minor version pinned under tools/ (tools/kube, and
# tools/kube-vX.Y for the others; docs/install-and-upgrade.md, "Kubernetes versions"). Each version's control plane
# is built on its first run, which takes a long while.
KUBE_VERSIONS   ?= 1.35 1.36 1.37
MATRIX_PACKAGES ?= ./reloader/ ./deploy/
test-matrix: build
	@for v in $(KUBE_VERSIONS); do \
		dirs=$$(RELOADER_KUBE_VERSION=$$v $(GO) run ./internal/dev/testcluster/cmd/testbin) || exit 1; \
		bins=$$(echo "$$dirs" | head -1); \
		echo "== Kubernetes $$v: $$($(GO) version -m $$bins/kube-apiserver | grep -w 'mod.*k8s.io/kubernetes')"; \
		RELOADER_KUBE_VERSION=$$v $(GO) test -count=1 -timeout 30m $(MATRIX_PACKAGES) || exit 1; \
	done

# Images and releases need no container engine (docs/install-and-upgrade.md, "Images"). The commit
# time is stamped into them, so the same commit gives the same image digests.
REVISION          ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
export SOURCE_DATE_EPOCH

# bin/image/: an OCI layout (oci/) of every platform, and a docker-save tarball each, tagged with
# the version the manifests under deploy/ name (the chart's appVersion), so they run it as they are.
# PLATFORMS picks some (e.g. PLATFORMS=linux/amd64); IMAGE_OUT and OVERLAYS move the outputs.
PLATFORMS     ?= linux/amd64,linux/arm64,linux/arm/v7
IMAGE_OUT     ?= bin/image
OVERLAYS      ?= bin/deploy
IMAGE_VERSION ?= $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' deploy/helm/reloader/Chart.yaml)
image:
	$(GO) run ./internal/dev/release/cmd/release --images-only --version $(IMAGE_VERSION) --revision "$(REVISION)" --platforms $(PLATFORMS) --out $(IMAGE_OUT)

# Pushes $(IMAGE_OUT) to $(REGISTRY)/reloader:$(IMAGE_VERSION) with the pinned crane and writes
# $(OVERLAYS)/{namespace,cluster}/, overlays of deploy/ that run it (kubectl apply -k).
push: registry-set image $(CRANE)
	$(GO) run ./internal/dev/release/cmd/release --push $(REGISTRY) --crane $(CRANE) --version $(IMAGE_VERSION) --out $(IMAGE_OUT) --overlays $(OVERLAYS)

registry-set:
	@test -n "$(REGISTRY)" || { echo "usage: make push REGISTRY=host[:port][/path], e.g. REGISTRY=localhost:5001"; exit 1; }

# dist/: binaries, images, rendered manifests, the chart, SBOMs and SHA256SUMS (RELEASING.md).
release:
	@case "$(VERSION)" in v[0-9]*.[0-9]*.[0-9]*) ;; *) echo "usage: make release VERSION=vX.Y.Z"; exit 1;; esac
	$(GO) run ./internal/dev/release/cmd/release --version $(VERSION) --revision "$(REVISION)" --out dist

# Rewrites docs/flags.md's generated block from --help (TestFlagsDocIsTheHelpOutput holds it there).
docs:
	$(GO) test -count=1 -run '^TestFlagsDocIsTheHelpOutput$$' ./internal/cli -args -update

# Installs bin/reloader as the kubectl plugin kubectl-reloader (kubectl reloader explain ...).
install-kubectl-plugin: build
	install -m 0755 $(BIN) $(or $(PLUGIN_DIR),$(HOME)/.local/bin)/kubectl-reloader

clean:
	rm -rf bin dist
