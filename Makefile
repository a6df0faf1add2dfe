# Harness: the two commands a new user needs are `make run` and `make test`.
# Everything else they need is fetched here: Go modules through the module
# proxy, Debian packages (ripgrep, git, patch) through apt-get, and the MCP
# test peers through npm.

GO      ?= go
BIN     := bin/harness
PKGS    := ./...
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all build run test test-short bench lint fmt tools deps clean example

all: build

build:
	$(GO) build -o $(BIN) ./cmd/harness
	$(GO) build -o bin/harness-sandbox ./cmd/harness-sandbox

# The main job on embedded defaults.
run: build
	./$(BIN) serve --demo

# The library's usage example: a scripted ReAct loop on a demo workspace.
example:
	$(GO) run ./examples/react

# Debian packages the tests and benchmarks use: ripgrep (search benchmark
# baseline), git (workspace git tests), patch (patch benchmark baseline).
tools:
	@missing=""; \
	for t in rg:ripgrep git:git patch:patch; do \
	  command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t##*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing"; \
	  $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@command -v node >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; }

# Go modules and the npm packages of the MCP interoperability tests.
deps: tools
	$(GO) mod download
	@if [ -f mcp/testdata/node/package.json ]; then \
	  npm ci --prefix mcp/testdata/node --no-audit --no-fund --loglevel=error; \
	fi

test: deps
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

# Quick loop for development: no race detector, no slow suites.
test-short:
	$(GO) test -short $(PKGS)

bench: deps build
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1s ./action ./runtime ./sanitize ./audit
	$(GO) test -run '^$$' -bench . -benchmem ./workspace/...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
