#!/usr/bin/env bash
# `make run`: the local stack on its default ports, the tables, the demo
# account (seeded once; its keys are kept in .local/demo-keys.json), and the
# API on 127.0.0.1:3000. Data stays on disk under .local/data between runs.
set -euo pipefail
cd "$(dirname "$0")/.."

export DYNAMODB_ENDPOINT=${DYNAMODB_ENDPOINT:-http://127.0.0.1:8000}
export S3_ENDPOINT=${S3_ENDPOINT:-http://127.0.0.1:9000}
# Without a provider address configured, payouts are paid through the
# stack's stand-in of Stripe's and PayPal's APIs (scripts/standin/).
export STRIPE_API_BASE=${STRIPE_API_BASE:-http://127.0.0.1:${PROVIDERS_PORT:-8070}}
export PAYPAL_API_BASE=${PAYPAL_API_BASE:-http://127.0.0.1:${PROVIDERS_PORT:-8070}}
# The signing secret is read from Secrets Manager as in AWS; the moto server
# (the S3 emulator) serves it, and `refctl tables create` makes it there.
export API_KEY_SECRET_ARN=${API_KEY_SECRET_ARN:-referrals-local/api-key-secret}
PORT=${PORT:-3000}
# Webhook endpoints on this machine (http, loopback) are allowed locally only.
export WEBHOOK_ALLOW_LOCAL=${WEBHOOK_ALLOW_LOCAL:-true}

started_stack=0
if ! scripts/stack.sh status run >/dev/null 2>&1; then
  scripts/stack.sh start run
  started_stack=1
fi
cleanup() { if [ "$started_stack" = 1 ]; then scripts/stack.sh stop run; fi; }
trap cleanup EXIT

cargo build --quiet -p refctl
REFCTL=${CARGO_TARGET_DIR:-target}/debug/refctl
$REFCTL tables create >/dev/null
seed=$($REFCTL demo seed --keys-file .local/demo-keys.json --base-url "http://127.0.0.1:$PORT")

python3 - "$seed" <<'PY'
import json, sys
s = json.loads(sys.argv[1])
k = s.get("keys", {})
print()
print("Demo account %s (%s)" % (s.get("accountId"), "seeded now" if s.get("seeded") else "seeded earlier"))
print("  test key: %s" % k.get("testKey", "?"))
print("  live key: %s" % k.get("liveKey", "?"))
print()
print("Try:")
print("  " + s.get("try", ""))
print()
print("The browser script on a demo landing page (affiliate DEMO10):")
print("  " + s.get("landingPage", ""))
if s.get("stripeEvent"):
    print()
    print("A Stripe invoice.paid for DEMO10, signed by Stripe's library, to the demo integration:")
    print("  " + s["stripeEvent"])
if s.get("portal"):
    print()
    print("DEMO10's affiliate portal (valid one hour; a new URL each run):")
    print("  " + s["portal"])
print()
PY
echo "Serving on http://127.0.0.1:$PORT (Ctrl-C to stop)"
$REFCTL serve --port "$PORT"
