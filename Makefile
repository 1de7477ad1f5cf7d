# Baton — developer entry points. `make` or `make help` lists them.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:
MAKEFLAGS += --no-print-directory

GO       ?= go
BIN      := bin/baton
GO_LDFLAGS ?= -s -w
FUZZTIME ?= 30s
export FUZZTIME

##@ Develop

.PHONY: help
help: ## Show this help
	@awk 'BEGIN { FS = ":.*## " } \
		/^##@/ { printf "\n%s\n", substr($$0, 5); next } \
		/^[a-zA-Z0-9_-]+:.*## / { printf "  %-16s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
	@echo

.PHONY: build
build: frontend ## Build bin/baton (static, -trimpath, version and commit stamped), embedding the SPA; runs no code generation
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(GO_LDFLAGS) $$(scripts/ldflags.sh)" -o $(BIN) ./cmd/baton

.PHONY: frontend
frontend: ## Build the SPA into frontend/dist (npm ci when node_modules is stale); without npm, embed the dist on disk
	@if [[ ! -f frontend/package.json ]]; then exit 0; fi; \
	if ! command -v npm >/dev/null; then \
		echo "warning: frontend/package.json exists but node/npm is not installed;" \
			"embedding the frontend/dist already on disk" >&2; \
		exit 0; \
	fi; \
	scripts/npm-deps.sh frontend; \
	npm --prefix frontend run build

.PHONY: run
run: build ## Start PostgreSQL+Redis if needed, migrate database `baton`, serve the demo
	scripts/dev-services.sh up --db baton >/dev/null
	. .data/env && ./$(BIN) migrate up && BATON_LOG_FORMAT=$${BATON_LOG_FORMAT:-text} exec ./$(BIN) serve --demo

.PHONY: example
example: ## Serve examples/embed beside `make run`: database baton_example, Env example, http://localhost:8090
	eval "$$(env -u DATABASE_URL scripts/dev-services.sh up --db baton_example)" && \
		BATON_DATABASE_URL=$$DATABASE_URL BATON_REDIS_URL=$$REDIS_URL BATON_LOG_FORMAT=$${BATON_LOG_FORMAT:-text} \
		$(GO) build -o bin/embed ./examples/embed && exec bin/embed

.PHONY: services
services: ## Make PostgreSQL and Redis reachable and write .data/env (scripts/dev-services.sh up)
	scripts/dev-services.sh up

.PHONY: services-down
services-down: ## Stop the PostgreSQL/Redis that `services` started under .data/
	scripts/dev-services.sh down

.PHONY: generate
generate: ## Regenerate code: go generate ./... and the SPA's GraphQL types
	$(GO) generate ./...
	@if [[ -f frontend/package.json ]]; then \
		scripts/npm-deps.sh frontend; \
		npm --prefix frontend run codegen; \
	fi

##@ Check

.PHONY: test
test: ## Everything CI runs: vet, gofmt, build, go test -race, SPA and browser tests (scripts/test.sh)
	scripts/test.sh

.PHONY: lint
lint: ## go vet, and fail if gofmt would change any file
	$(GO) vet ./...
	@files=$$(find . -name '*.go' -not -path './.git/*' -not -path './.data/*' \
		-not -path '*/node_modules/*' -print0 | xargs -0 -r gofmt -l); \
	if [[ -n "$$files" ]]; then \
		echo "gofmt would change these files (run gofmt -w):" >&2; echo "$$files" >&2; exit 1; \
	fi

.PHONY: check-generate
check-generate: generate ## Fail if `make generate` changes or adds files (CI drift check)
	@if ! git diff --exit-code --stat; then \
		echo "generated code is out of date: run make generate and commit the result" >&2; exit 1; \
	fi
	@untracked=$$(git ls-files --others --exclude-standard); \
	if [[ -n "$$untracked" ]]; then \
		echo "files not in git after make generate (commit or .gitignore them):" >&2; \
		echo "$$untracked" >&2; exit 1; \
	fi

.PHONY: bench
bench: ## Benchmarks beside PostgreSQL, Redis and River baselines, ROUNDS (5) interleaved rounds; writes BENCHMARKS.md (scripts/bench.sh)
	scripts/bench.sh

.PHONY: bench-ha
bench-ha: ## High-availability figures (Sentinel failover, PgBouncer, kill to auto-resume), ROUNDS (5) rounds; writes bench/ha.md (scripts/bench-ha.sh)
	scripts/bench-ha.sh

.PHONY: fuzz
fuzz: ## Run every Fuzz* target for FUZZTIME each (default 30s; scripts/fuzz.sh)
	scripts/fuzz.sh

# How many random operation sequences `make soak` runs through the model-based safety test
# (`make test` runs 200).
MODEL_SEQUENCES ?= 5000
# How many kill-and-requeue scenarios `make soak` runs through the shard counters' model test
# (`make test` runs 3).
SHARD_MODEL_SCENARIOS ?= 200

.PHONY: soak
soak: build ## Long soak tests: the model-based safety test over MODEL_SEQUENCES (5000) sequences, the shard counters' model over SHARD_MODEL_SCENARIOS (200) scenarios, then go test -tags soak -run Soak ./e2e/... (60 min limit each)
	@if [[ ! -d e2e ]]; then echo "soak: there is no e2e/ directory yet, so no soak test to run" >&2; exit 1; fi
	scripts/dev-services.sh up >/dev/null
	. .data/env && BATON_MODEL_SEQUENCES=$(MODEL_SEQUENCES) $(GO) test -race -run '^TestModelSafety$$' -count=1 -timeout 60m ./internal/demo/
	. .data/env && BATON_SHARD_MODEL_SCENARIOS=$(SHARD_MODEL_SCENARIOS) $(GO) test -run '^TestShardCountersModel$$' -count=1 -timeout 60m ./runner/
	. .data/env && BATON_BIN=$(CURDIR)/$(BIN) $(GO) test -tags soak -run Soak -count=1 -timeout 60m ./e2e/...

##@ Clean up

.PHONY: clean
clean: ## Remove build output and test artifacts (keeps .data/ servers and their data)
	rm -rf bin
	rm -f .data/bench.txt .data/go-test.log
	find . -name '*.test' -type f -not -path './.git/*' -not -path '*/node_modules/*' -delete

.PHONY: distclean
distclean: clean ## Also stop the private servers and delete .data/ and node_modules
	scripts/dev-services.sh down
	@# As root the private cluster may live outside the repository, behind the .data/pg link.
	if [[ -L .data/pg ]]; then rm -rf "$$(readlink -f .data/pg)"; fi
	rm -rf .data frontend/node_modules e2e/node_modules e2e/api/node_modules
