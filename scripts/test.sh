#!/usr/bin/env bash
# `make test`: formatting, lints, unit tests, integration tests against the
# test stack (DynamoDB Local in memory and the S3 emulator, on their own
# ports so a running `make run` is left alone), browser tests, template lint.
set -euo pipefail
cd "$(dirname "$0")/.."

export DYNAMODB_ENDPOINT=http://127.0.0.1:${TEST_DDB_PORT:-18000}
export S3_ENDPOINT=http://127.0.0.1:${TEST_S3_PORT:-19000}
# The stack's stand-in of Stripe's and PayPal's APIs (scripts/standin/).
export PROVIDERS_PORT=${TEST_PROVIDERS_PORT:-18070}
export STRIPE_API_BASE=http://127.0.0.1:$PROVIDERS_PORT PAYPAL_API_BASE=http://127.0.0.1:$PROVIDERS_PORT
export SAM_CLI_TELEMETRY=0 AWS_DEFAULT_REGION=us-east-1
export RUST_BACKTRACE=0

# Each step prints the seconds since the start, so a slow phase shows in CI's log.
step() { printf '\n== %s  [%ds]\n' "$*" "$SECONDS"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
# Without the incremental cache, as on a fresh machine: a cached layout can
# hide a future nested past the compiler's query depth.
CARGO_INCREMENTAL=0 cargo clippy --workspace --all-targets --quiet -- -D warnings

step "supply chain: cargo deny (licences, sources, duplicate majors, RustSec advisories offline)"
scripts/deny.sh

# Fails when one of the packages links the crate: `refuse_link <crate> <package>...`.
# A package name that is not the workspace's fails too, and a crate in no
# package's graph is said so, so a misspelt or renamed name shows.
refuse_link() {
  local dep=$1; shift
  for p in "$@"; do
    if ! cargo tree --quiet -e normal -p "$p" --depth 0 >/dev/null 2>&1; then
      echo "refuse_link: no package $p in the workspace" >&2
      exit 1
    fi
  done
  if ! cargo tree --quiet -e normal --workspace -i "$dep" --depth 0 >/dev/null 2>&1; then
    echo "note: $dep is in no package's graph"
    return 0
  fi
  for p in "$@"; do
    if cargo tree --quiet -e normal -p "$p" -i "$dep" >/dev/null 2>&1; then
      echo "$p links $dep (cargo tree -e features -p $p -i $dep)" >&2
      exit 1
    fi
  done
}

step "the layers link what docs/architecture.md says: domain and wire no AWS SDK, axum or tokio; store and services no axum; payout-job and invoices no axum or api"
refuse_link aws-smithy-types domain wire
refuse_link tokio domain wire
refuse_link axum domain wire store services payout-job invoices
refuse_link lambda_http domain wire store services
refuse_link api payout-job invoices
echo "ok: none of them"

step "functions that never touch S3 do not link aws-sdk-s3"
refuse_link aws-sdk-s3 affiliates applications assets campaigns conversions integrations public webhooks
echo "ok: none of them"

step "no function links aws-config (whole credential chain) or aws-lc-rs (a second crypto backend)"
functions=(affiliates applications assets campaigns conversions integrations invoices payout-job payouts portal public webhooks)
refuse_link aws-config "${functions[@]}"
refuse_link aws-lc-rs "${functions[@]}"
echo "ok: none of them"

started_stack=0
if ! DDB_PORT=${TEST_DDB_PORT:-18000} S3_PORT=${TEST_S3_PORT:-19000} scripts/stack.sh status test >/dev/null 2>&1; then
  step "start the test stack"
  DDB_PORT=${TEST_DDB_PORT:-18000} S3_PORT=${TEST_S3_PORT:-19000} scripts/stack.sh start test
  started_stack=1
fi
cleanup() { if [ "$started_stack" = 1 ]; then scripts/stack.sh stop test; fi; }
trap cleanup EXIT

results=$(mktemp)
trap 'cleanup; rm -f "$results"' EXIT

step "cargo build --bins (the function binaries the Lambda entry-point test runs)"
cargo build --workspace --bins --quiet

step "cargo test (unit and integration, against the test stack)"
cargo test --workspace --all-targets --quiet 2>&1 | tee -a "$results"

# DynamoDB Local slows down as it holds more data: after the integration
# tests, the API fuzzing took eight times as long as on a fresh one. The
# steps below seed what they need, so they start on an empty stack (when
# this script started it; a stack someone else runs is left as it is).
if [ "$started_stack" = 1 ]; then
  step "restart the test stack (empty, for the browser tests and the fuzzing)"
  DDB_PORT=${TEST_DDB_PORT:-18000} S3_PORT=${TEST_S3_PORT:-19000} scripts/stack.sh restart test
fi

step "the provider stand-in against the providers' documents and Stripe's library (its own port)"
selftest=$(.local/venv/bin/python scripts/standin/selftest.py 2>&1) || { echo "$selftest"; exit 1; }
echo "$selftest" | tail -1
echo "$selftest" | tail -1 | sed -E 's/^([0-9]+) passed, ([0-9]+) failed$/test result: ok. \1 passed; \2 failed/' >> "$results"

step "affiliate portal size (the three files gzipped; fails above 30 KB)"
node portal/scripts/size.mjs

if [ -f tracker/package.json ] || [ -d tracker/test ]; then
  step "browser tests (headless Chromium)"
  scripts/browser-test.sh 2>&1 | tee -a "$results"
fi

step "OpenAPI checks (schemathesis, generated Python client)"
scripts/api-fuzz.sh 2>&1 | tee -a "$results"

step "sam validate --lint"
.local/venv/bin/sam validate --lint

# Stop what this script started first, so the totals are the last line.
cleanup
started_stack=0
printf '\n== done  [%ds]\n' "$SECONDS"

# One closing line with the totals of every runner (cargo's and node's).
python3 - "$results" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
passed = sum(int(n) for n in re.findall(r"test result: \w+\. (\d+) passed", text))
failed = sum(int(n) for n in re.findall(r"test result: \w+\. \d+ passed; (\d+) failed", text))
passed += sum(int(n) for n in re.findall(r"^# pass (\d+)$", text, re.M))
failed += sum(int(n) for n in re.findall(r"^# fail (\d+)$", text, re.M))
print()
print(f"tests: {passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)
PY
