#!/usr/bin/env bash
# `make bench`: runs refbench against the test stack (started here when it is
# not running) and prints the tables that docs/performance.md quotes. Each
# section's output is also kept in target/bench/ (the default section in
# refbench.txt, the others in <section>.txt), and docs/cost.md is generated
# from them at the end (scripts/cost.py).
set -euo pipefail
cd "$(dirname "$0")/.."

export DYNAMODB_ENDPOINT=http://127.0.0.1:${TEST_DDB_PORT:-18000}
export S3_ENDPOINT=http://127.0.0.1:${TEST_S3_PORT:-19000}
# The stack's stand-in of Stripe's and PayPal's APIs (the rails section).
export PROVIDERS_PORT=${TEST_PROVIDERS_PORT:-18070}
export STRIPE_API_BASE=http://127.0.0.1:$PROVIDERS_PORT PAYPAL_API_BASE=http://127.0.0.1:$PROVIDERS_PORT

started_stack=0
if ! scripts/stack.sh status test >/dev/null 2>&1; then
  scripts/stack.sh start test
  started_stack=1
fi
cleanup() { if [ "$started_stack" = 1 ]; then scripts/stack.sh stop test; fi; }
trap cleanup EXIT

# Call and capacity counts do not depend on optimisation: the dev build is
# enough for them. The rates (load, hot) are measured on the release build,
# the code Lambda runs.
refbench() {
  case "${1:-}" in
    load|hot) cargo run --release --quiet -p refctl --bin refbench -- "$@" ;;
    *) cargo run --quiet -p refctl --bin refbench -- "$@" ;;
  esac
}

# Runs one section, printing its output and keeping it in
# target/bench/<section>.txt (replaced only when the section succeeds).
out=target/bench
bench() {
  local file="$out/${1:-refbench}.txt"
  mkdir -p "$out"
  refbench "$@" | tee "$file.new"
  mv "$file.new" "$file"
}

# One section: `scripts/bench.sh webhooks|load|hot|cold-start|connectors|tracking|plans|payouts|rails|reports`.
if [ $# -gt 0 ]; then
  bench "$@"
  exit
fi

# DynamoDB Local slows down as it holds more data: each section that measures
# rates starts on a fresh one (when this script started the stack itself).
fresh() {
  if [ "$started_stack" = 1 ]; then
    scripts/stack.sh restart test >/dev/null
  else
    echo "bench.sh: the test stack was already running; rates are measured on it as it is" >&2
  fi
}
bench
echo
# Paying through Stripe and PayPal (their stand-in), on tables of its own.
bench rails
echo
# Series, import and export (contract section 17), on a fresh table.
fresh
bench reports
echo
# The default section leaves a stream backlog (its 20,000 seeded
# conversions) that the local consumer would read before the measured
# events: the webhook latency is measured on a fresh table.
fresh
bench webhooks
echo
fresh
bench load
echo
fresh
bench hot
echo
bench cold-start
echo
# What a million of each operation and a merchant's month cost on AWS, from
# target/bench/refbench.txt, load.txt and rails.txt (fails if a row it needs is missing).
"${PYTHON:-python3}" scripts/cost.py
