# joule: the README's two commands are `make run` and `make test`.
GO      ?= go
BIN     := bin/joule
PKGS    := ./...
FUZZTIME ?= 20s

.PHONY: all build install deps run test test-short bench bench-cascade lint fuzz vectors clean

all: build

# Static (no cgo): a hook process starts without the dynamic loader.
# joule-hook, the thin client hosts run per tool call, goes beside joule:
# that is where joule install and the client look for each other.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/joule
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/joule-hook ./cmd/joule-hook
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/joule-exec ./cmd/joule-exec

# The three binaries into $(go env GOBIN), else $(go env GOPATH)/bin, as
# 'go install github.com/joulehook/joule/cmd/...@latest' puts them: joule,
# joule-hook (the thin client hosts run per tool call) and joule-exec (the
# confinement of contained commands), side by side as joule install wants.
install:
	CGO_ENABLED=0 $(GO) install -trimpath ./cmd/joule ./cmd/joule-hook ./cmd/joule-exec

# The main job end to end, on embedded defaults: no server to install.
# The demo's store is kept, and its last line is the joule ui command that
# opens it in the dashboard.
run: build
	./$(BIN) demo --keep

# What the suite needs beyond Go (the real host CLIs and SDK clients from
# npm, PostgreSQL and other Debian packages), installed idempotently by
# the scripts in .ci/setup.d, in name order.
deps:
	@for script in .ci/setup.d/*.sh; do echo "deps: $$script"; bash "$$script" || exit 1; done

# The whole suite, its own set-up included: vet, race-checked tests (fuzz
# seeds included), and both conformance packs through the real binary.
test: deps build
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 50m $(PKGS)
	./$(BIN) conformance check conformance/v1
	./$(BIN) conformance check conformance/testdata/external-v1

test-short:
	$(GO) test -short $(PKGS)

# Benchmarks; each prints its ratio against a baseline measured in the same run.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 1 $(PKGS)

# The cascade benchmark on the Go toolchain's own sources: per tier what
# closed, how much of it correctly, and the joules, beside all-L4. Writes
# bench/cascade/out/ (CASCADE_FLAGS: -n, -seed, -out, -goroot, ...).
bench-cascade:
	$(GO) run ./bench/cascade $(CASCADE_FLAGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt wants to change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

# Run every fuzz target for FUZZTIME each.
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# Regenerate this implementation's conformance pack (deterministic).
vectors: build
	./$(BIN) conformance gen conformance/v1

clean:
	rm -rf bin
