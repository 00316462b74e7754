#!/usr/bin/env bash
# Builds Loki's single binary (cmd/loki) at LOKI_VERSION from the Go module proxy: no
# release downloads or images are reachable here. Usage: hack/build-loki.sh [OUT_DIR]
# (default: bin/). Writes OUT_DIR/loki-v<version> and points the symlink OUT_DIR/loki at
# it. A binary already present is never rebuilt; the throwaway build module lives in
# CACHE_DIR so Go's module and build caches make a rebuild cheap.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/go.sh"

out=$(made_dir "${1:-${REPO_ROOT}/bin}")
binary=${out}/loki-v${LOKI_VERSION}
module=github.com/grafana/loki/v3

# copy_directives LOKI@VERSION copies the replace and exclude directives of Loki's go.mod:
# they apply only in the main module, and Loki relies on its forks (memberlist, objstore,
# regexp, ...): without them the build picks upstream versions that do not compile
# against Loki. Its one local replace (./pkg/push) points into the repository, outside
# the module's zip; the pseudo-version Loki requires for that module is what the proxy
# serves instead.
copy_directives() { go_mod_copy "$(go_module_dir "$1")/go.mod" replace exclude; }

if [ ! -x "$binary" ]; then
  work=${CACHE_DIR}/loki-build-v${LOKI_VERSION}
  go_module_init --edit copy_directives "$work" "${module}@v${LOKI_VERSION}" "${module}/cmd/loki"
  revision=$(go mod download -json "${module}@v${LOKI_VERSION}" | sed -n 's/^\t\t"Hash": "\(.*\)",$/\1/p')
  log "building loki v${LOKI_VERSION} (first time takes many minutes)"
  # The version variables are what `loki -version` and /loki/api/v1/status/buildinfo
  # report. No netgo tag, which would change the net package and so every package above
  # it: CGO off already gives a static binary with Go's own resolver.
  build=${module}/pkg/util/build
  go_build -X "${build}.Version=${LOKI_VERSION}" -X "${build}.Revision=${revision}" \
    -X "${build}.Branch=v${LOKI_VERSION}" "$work" "$binary" "${module}/cmd/loki"
fi
ln -sfn "$(basename "$binary")" "${out}/loki"
