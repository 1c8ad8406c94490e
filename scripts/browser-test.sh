#!/usr/bin/env bash
# Browser tests of the tracking script (tracker/) and the affiliate portal
# (portal/): headless Chromium (/usr/bin/chromium) driven by playwright-core
# (.local/node, from scripts/install.sh) against `target/debug/refctl serve`
# on the test stack.
# The tests start and stop the local host themselves, on a free port with a
# fresh table. Called by scripts/test.sh; runs on its own too.
#
# Environment: DYNAMODB_ENDPOINT / S3_ENDPOINT (default: the test stack on
# 127.0.0.1:18000 / 19000), STRIPE_API_BASE / PAYPAL_API_BASE (default: the
# test stack's provider stand-in on 127.0.0.1:18070, TEST_PROVIDERS_PORT),
# CHROMIUM (default /usr/bin/chromium).
set -euo pipefail
cd "$(dirname "$0")/.."

export DYNAMODB_ENDPOINT=${DYNAMODB_ENDPOINT:-http://127.0.0.1:${TEST_DDB_PORT:-18000}}
export S3_ENDPOINT=${S3_ENDPOINT:-http://127.0.0.1:${TEST_S3_PORT:-19000}}
export STRIPE_API_BASE=${STRIPE_API_BASE:-http://127.0.0.1:${TEST_PROVIDERS_PORT:-18070}}
export PAYPAL_API_BASE=${PAYPAL_API_BASE:-http://127.0.0.1:${TEST_PROVIDERS_PORT:-18070}}
export NODE_PATH="$PWD/.local/node/node_modules${NODE_PATH:+:$NODE_PATH}"

die() { printf 'browser-test.sh: %s\n' "$*" >&2; exit 1; }
[[ -f .local/node/node_modules/playwright-core/package.json ]] ||
  die "playwright-core is missing; run scripts/install.sh (make install)"
[[ -x ${CHROMIUM:-/usr/bin/chromium} ]] ||
  die "${CHROMIUM:-/usr/bin/chromium} is missing; run scripts/install.sh (make install)"

started_stack=0
if ! DDB_PORT=${TEST_DDB_PORT:-18000} S3_PORT=${TEST_S3_PORT:-19000} PROVIDERS_PORT=${TEST_PROVIDERS_PORT:-18070} scripts/stack.sh status test >/dev/null 2>&1; then
  DDB_PORT=${TEST_DDB_PORT:-18000} S3_PORT=${TEST_S3_PORT:-19000} PROVIDERS_PORT=${TEST_PROVIDERS_PORT:-18070} scripts/stack.sh start test
  started_stack=1
fi
cleanup() { if [[ $started_stack == 1 ]]; then scripts/stack.sh stop test; fi; }
trap cleanup EXIT

cargo build -q -p refctl
node --test tracker/test/*.test.mjs portal/test/*.test.mjs
