# Harness: the two commands a new user needs are `make run` and `make test`.
# Everything else they need is fetched here: Go modules through the module
# proxy, Debian packages (ripgrep, git, patch) through apt-get, and the MCP
# test peers through npm.

GO      ?= go
BIN     := bin/harness
PKGS    := ./...
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all build run test test-short bench pgo load contract fuzz lint fmt tools deps clean example

all: build

# Static binaries (no cgo): they start faster, which the sandbox helper,
# started once per command, and MCP clients, which start the bridge, feel.
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/harness
	CGO_ENABLED=0 $(GO) build -o bin/harness-sandbox ./cmd/harness-sandbox

# The main job on embedded defaults: the HTTP service with an in-memory
# token store, a JSONL audit log and a demo workspace in a temporary
# directory. It prints a one-time API key and a curl example of
# preview -> execute. ADDR=host:port to listen elsewhere.
ADDR ?= 127.0.0.1:8080
run: build
	./$(BIN) serve --demo --addr $(ADDR)

# The library's usage example: a scripted ReAct loop on a demo workspace.
example:
	$(GO) run ./examples/react

# The fixed evaluation: the scenarios of internal/eval through the library,
# the HTTP service, the CLI and the MCP bridge, printed as a table; fails on
# any difference between the four. The evaluation gives Harness a home of
# its own; Go keeps the invoking user's caches and settings even when HOME
# points elsewhere (else every module is fetched and built again).
eval:
	@h=$$(getent passwd "$$(id -u)" 2>/dev/null | cut -d: -f6); \
	if [ -n "$$h" ] && [ "$$h" != "$$HOME" ]; then \
	  export GOENV=$$(HOME=$$h $(GO) env GOENV) GOCACHE=$$(HOME=$$h $(GO) env GOCACHE) GOMODCACHE=$$(HOME=$$h $(GO) env GOMODCACHE); \
	fi; \
	$(GO) run ./cmd/harness-eval

# Debian packages the tests and benchmarks use: ripgrep (search benchmark
# baseline), git (workspace git tests), patch (patch benchmark baseline),
# chromium and chromium-driver (the console's browser tests), and Flask and
# websockets for Debian's python3 (the AHP interoperability peers).
tools:
	@missing=""; \
	for t in rg:ripgrep git:git patch:patch chromium:chromium chromedriver:chromium-driver; do \
	  command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t##*:}"; \
	done; \
	/usr/bin/python3 -c 'import flask' >/dev/null 2>&1 || missing="$$missing python3-flask"; \
	/usr/bin/python3 -c 'import websockets' >/dev/null 2>&1 || missing="$$missing python3-websockets"; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing"; \
	  $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@command -v node >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; }

# The npm packages of the MCP interoperability tests and of the generated
# TypeScript client of the HTTP API (Go modules come through the module
# proxy as the build needs them).
deps: tools
	@for d in mcp/testdata/node trusted/testdata/node; do \
	  if [ -f $$d/package.json ]; then \
	    npm ci --prefix $$d --no-audit --no-fund --loglevel=error || exit 1; \
	  fi; \
	done

# The race-enabled test binaries are compiled without the harness binary's
# PGO profile: with it, go test compiles all of cmd/harness's dependencies
# again, with the profile, for that package's tests alone, and on an empty
# build cache the test binaries took twice as long to compile (546 s
# against 283 s on the 2-core VM). The harness binary the tests start is
# still built by go build, with its profile. Tests of how the Go scheduler
# treats a goroutine cannot run under the race detector, which changes that
# (they are built with !race): they run again without it.
test: deps
	$(GO) vet $(PKGS)
	$(GO) test -race -pgo=off -count=1 -timeout 20m $(PKGS)
	$(GO) test -pgo=off -count=1 -run '^Test(Stdio|Stream)ReaderYieldsToTheScheduler$$' ./mcp/bridge ./ahp

# Quick loop for development: no race detector, no slow suites.
test-short:
	$(GO) test -short $(PKGS)

# Speed and memory targets (see each package's benchmarks): the dispatcher,
# the sanitizer, rules and governance, the audit log, search against ripgrep and grep, command
# overhead with and without the sandbox, patches against git apply and GNU
# patch, preview/execute pairs, and the MCP bridge against the reference
# filesystem server. Machines here are shared: compare ratios from one run.
# The benchmarks are compiled with the harness binary's profile (PGO,
# below), so that they measure the code as the binary runs it; without
# -pgo they measure it as a program that imports the packages and has no
# profile of its own would.
GOBENCH = $(GO) test -pgo=$(PGO) -run '^$$'
bench: deps build
	$(GOBENCH) -bench . -benchmem ./action ./schema ./runtime ./sanitize ./audit ./trusted
	$(GOBENCH) -bench 'Rules200' -benchmem ./policy
	$(GOBENCH) -bench 'BridgeList|BridgeRead' -benchmem ./mcp/bridge
	$(GOBENCH) -bench 'SearchVsRipgrep' -benchtime 5x ./workspace
	$(GOBENCH) -bench 'RunShellPwd' -benchtime 200x ./workspace
	$(GOBENCH) -bench 'ApplyCorpus|ApplyInMemory' -benchtime 3x ./workspace/patch
	$(GO) test -run '^$$' -bench 'InteropVsFilesystemServer' -benchtime 1x ./mcp/bridge
	$(MAKE) load

# Profile-guided optimisation: go build and go install compile
# cmd/harness with cmd/harness/default.pgo, CPU profiles of the binary's
# hot paths merged: the sanitizer and redact-observations, rules and
# governance, Execute, the audit log, preview/execute, and the MCP bridge
# answering reads and listings. `make pgo` takes them again from the
# benchmarks (after a change that moves the hot paths); it takes about a
# minute.
PGO := $(CURDIR)/cmd/harness/default.pgo
pgo:
	@d=$$(mktemp -d) && trap 'rm -rf $$d' EXIT && \
	$(GO) test -pgo=off -run '^$$' -bench 'Sanitize1MiB$$|Sanitize1MiBPayload|ValueSmallMap$$' -benchtime 2s -cpuprofile $$d/sanitize.prof -o $$d/sanitize.test ./sanitize && \
	$(GO) test -pgo=off -run '^$$' -bench 'RedactObservation1MiB|GovernanceAddedCost|ExecuteNoop' -benchtime 2s -cpuprofile $$d/runtime.prof -o $$d/runtime.test ./runtime && \
	$(GO) test -pgo=off -run '^$$' -bench 'Rules200$$' -benchtime 2s -cpuprofile $$d/policy.prof -o $$d/policy.test ./policy && \
	$(GO) test -pgo=off -run '^$$' -bench 'JSONLAppend$$' -benchtime 2s -cpuprofile $$d/audit.prof -o $$d/audit.test ./audit && \
	$(GO) test -pgo=off -run '^$$' -bench 'PreviewExecute' -benchtime 2s -cpuprofile $$d/trusted.prof -o $$d/trusted.test ./trusted && \
	$(GO) test -pgo=off -run '^$$' -bench 'StdioRead64KiB|BridgeList1000Names' -benchtime 2s -cpuprofile $$d/bridge.prof -o $$d/bridge.test ./mcp/bridge && \
	$(GO) tool pprof -proto $$d/*.prof > $(PGO).tmp && mv $(PGO).tmp $(PGO) && \
	echo "wrote $(PGO)"

# Load test of harness serve: 32 clients doing preview -> execute of a
# small patch, in memory and with Redis.
load:
	$(GO) run ./cmd/harness-load -store memory -clients 32 -duration 10s
	$(GO) run ./cmd/harness-load -store redis://127.0.0.1:6379/15 -clients 32 -duration 10s

# The SPEC's CLI and HTTP contract, checked from outside (needs ../shared).
contract: build
	bash ../shared/contract/core.sh
	bash ../shared/contract/trusted.sh
	bash ../shared/contract/pipeline.sh
	bash ../shared/contract/firstrun.sh
	bash ../shared/contract/rules.sh
	bash ../shared/contract/approvals.sh

# Fuzzing: every fuzz target under FUZZROOT (default: the whole tree;
# FUZZ, a regular expression, narrows them by name) for FUZZTIME each (a
# duration, or a count such as 10000x). A failing input is written to the
# package's testdata/fuzz/<target>/ and fails the run. Go 1.26's fuzz
# coordinator can also fail a run at its deadline, with "context deadline
# exceeded" and no failing input (golang/go#75804); such a run is taken
# once more, and fails only if it fails again. Any other failure fails at
# once.
FUZZTIME ?= 30s
FUZZ ?= .
FUZZROOT ?= .
fuzz:
	@fail=0; log=$$(mktemp); \
	for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' $(FUZZROOT) | xargs -n1 dirname | sort -u); do \
	  list=$$(cd $$dir && $(GO) test -list '^Fuzz' . 2>&1) || { echo "FAIL  $$dir"; echo "$$list" | tail -20; fail=1; continue; }; \
	  for name in $$(echo "$$list" | grep '^Fuzz' | grep -E '$(FUZZ)'); do \
	    for try in 1 2; do \
	      before=$$(ls $$dir/testdata/fuzz/$$name 2>/dev/null | wc -l); \
	      if (cd $$dir && $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) .) > $$log 2>&1; then \
	        echo "ok    $$name $$dir"; break; \
	      fi; \
	      if [ $$try = 2 ] || [ $$(ls $$dir/testdata/fuzz/$$name 2>/dev/null | wc -l) -ne $$before ] || \
	         ! grep -q 'context deadline exceeded' $$log; then \
	        echo "FAIL  $$name $$dir"; tail -20 $$log; fail=1; break; \
	      fi; \
	      echo "again $$name $$dir (context deadline exceeded, no failing input: golang/go#75804)"; \
	    done; \
	  done; \
	done; rm -f $$log; exit $$fail

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
