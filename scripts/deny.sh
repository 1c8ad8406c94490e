#!/usr/bin/env bash
# Supply-chain checks of the Rust dependency graph, with no network:
# cargo-deny (pinned, built by scripts/install.sh) against deny.toml:
# licences allowed by name, crates.io as the only source, no duplicate
# majors, and the RustSec advisories of the snapshot in ../shared/advisory-db
# (ADVISORY_DB= to point elsewhere), imported once under .local/advisory-dbs
# as the git repository cargo-deny reads. Prints the snapshot's date.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
LOCAL="$ROOT/.local"
VERSION=$(sed -nE 's/^CARGO_DENY_VERSION=(.*)$/\1/p' "$ROOT/scripts/install.sh")
DENY="$LOCAL/tools/cargo-deny-$VERSION/bin/cargo-deny"
SNAPSHOT=${ADVISORY_DB:-$ROOT/../shared/advisory-db}
# The directory cargo-deny keeps the default database in (named after its URL).
DB="$LOCAL/advisory-dbs/advisory-db-3157b0e258782691"

say() { printf 'deny.sh: %s\n' "$*"; }
[[ -x $DENY ]] || { say "cargo-deny $VERSION missing: run scripts/install.sh"; exit 1; }

checks=(licenses bans sources)
if [[ -f $SNAPSHOT/SNAPSHOT ]]; then
  stamp=$(<"$SNAPSHOT/SNAPSHOT")
  date=$(sed -nE 's/.*\(([0-9]{4}-[0-9]{2}-[0-9]{2})\).*/\1/p' <<<"$stamp")
  [[ -n $date ]] || { say "cannot read a date from $SNAPSHOT/SNAPSHOT: $stamp"; exit 1; }
  if [[ ! -f $DB/.snapshot || "$(<"$DB/.snapshot")" != "$stamp" ]]; then
    rm -rf "$DB"
    mkdir -p "$DB"
    cp -r "$SNAPSHOT/." "$DB/"
    chmod -R u+w "$DB"
    (
      cd "$DB"
      git init -q
      git add -A
      GIT_AUTHOR_DATE="${date}T00:00:00Z" GIT_COMMITTER_DATE="${date}T00:00:00Z" \
        git -c user.name=snapshot -c user.email=snapshot@localhost -c commit.gpgsign=false \
        commit -q -m "RustSec advisory-db snapshot $stamp"
    )
    printf '%s\n' "$stamp" >"$DB/.snapshot"
  fi
  say "RustSec advisory database: snapshot $stamp ($(find "$DB/crates" -name '*.md' | wc -l) advisories)"
  checks+=(advisories)
else
  say "no RustSec snapshot at $SNAPSHOT (ADVISORY_DB=): advisories NOT checked"
fi
cd "$ROOT"
# Every platform's packages, for the graph (cached: no network once fetched).
cargo fetch --locked --quiet 2>/dev/null || cargo fetch --locked --offline --quiet
"$DENY" --offline --locked check "${checks[@]}"
