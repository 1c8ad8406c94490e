# The two commands: `make run` and `make test`. Everything they need is
# installed into .local/ by scripts/install.sh (pinned versions).

SHELL := /bin/bash
.DEFAULT_GOAL := help

.PHONY: help install run test build validate bench openapi fmt lint stack-stop

help: ## List the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

install: ## Install the pinned local tools into .local/ (no-op when present)
	@scripts/install.sh

run: install ## Start the local stack, seed the demo account once, serve on 127.0.0.1:3000
	@scripts/run.sh

test: install ## fmt, clippy, unit + integration + browser tests on the local stack, sam validate --lint
	@scripts/test.sh

build: install ## sam build (arm64 Lambda binaries through cargo-lambda)
	@PATH="$(CURDIR)/.local/venv/bin:$$PATH" SAM_CLI_TELEMETRY=0 CARGO_TARGET_DIR="$(CURDIR)/target/sam" sam build --beta-features

validate: install ## sam validate --lint
	@PATH="$(CURDIR)/.local/venv/bin:$$PATH" SAM_CLI_TELEMETRY=0 AWS_DEFAULT_REGION=us-east-1 sam validate --lint

bench: install ## DynamoDB calls, round trips, capacity units, webhook latency and binary sizes, then docs/cost.md (`scripts/bench.sh webhooks`: the webhook latency alone)
	@scripts/bench.sh

openapi: ## Write docs/openapi.json, generated from the code (refctl openapi)
	@cargo run -q -p refctl --bin refctl -- openapi > docs/openapi.json.new && mv docs/openapi.json.new docs/openapi.json

fmt: ## Format the code
	@cargo fmt --all

lint: ## Clippy with warnings as errors
	@cargo clippy --workspace --all-targets -- -D warnings

stack-stop: ## Stop any local stack this project started
	@scripts/stack.sh stop run || true
	@scripts/stack.sh stop test || true
