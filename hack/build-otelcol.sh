#!/usr/bin/env bash
# Builds logbench's OpenTelemetry Collector from hack/otelcol/builder-config.yaml with the
# collector builder (`make otelcol` installs it first and passes it as OTELCOL_BUILDER).
# Every module comes from the Go module proxy. Usage: hack/build-otelcol.sh [OUT_DIR]
# (default: bin/). Writes OUT_DIR/otelcol-v<dist.version> and points the symlink
# OUT_DIR/otelcol at it. A binary already present is never rebuilt; the generated module
# lives in CACHE_DIR so Go's module and build caches make a rebuild cheap.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

manifest=${REPO_ROOT}/hack/otelcol/builder-config.yaml
builder=${OTELCOL_BUILDER:-${REPO_ROOT}/bin/builder}
out=$(made_dir "${1:-${REPO_ROOT}/bin}")
version=$(sed -n 's/^  version: *\([^ ]*\)$/\1/p' "$manifest")
[ -n "$version" ] || die "no dist.version in $manifest"
binary=${out}/otelcol-v${version}

if [ ! -x "$binary" ]; then
  [ -x "$builder" ] || die "$builder not found: run make otelcol-builder"
  # The manifest's output_path is ".", so the generated sources stay in this folder.
  work=${CACHE_DIR}/otelcol-build-v${version}
  mkdir -p "$work"
  cd "$work"
  log "building otelcol v${version} (first time takes several minutes)"
  # Strict versioning fails the build when a component's resolved version differs from
  # the manifest's, or the core version from the builder's own.
  "$builder" --config="$manifest" --skip-strict-versioning=false
  mv otelcol "${binary}.tmp"
  mv "${binary}.tmp" "$binary"
fi
ln -sfn "$(basename "$binary")" "${out}/otelcol"
