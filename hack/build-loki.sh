#!/usr/bin/env bash
# Builds Loki's single binary (cmd/loki) from the Go module proxy: no release downloads or
# images are reachable here. Usage: hack/build-loki.sh [OUT_DIR]   (default: bin/)
# Writes OUT_DIR/loki-v<version> and points the symlink OUT_DIR/loki at it. A binary
# already present is never rebuilt; the throwaway build module lives in
# $HOME/.cache/logbench so Go's module and build caches make a rebuild cheap.
set -euo pipefail

LOKI_VERSION=${LOKI_VERSION:-3.6.4}
out=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)
binary=${out}/loki-v${LOKI_VERSION}

if [ ! -x "$binary" ]; then
  work=${HOME}/.cache/logbench/loki-build-v${LOKI_VERSION}
  mkdir -p "$work"
  cd "$work"
  module=github.com/grafana/loki/v3
  info=$(go mod download -json "${module}@v${LOKI_VERSION}")
  loki_dir=$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' <<<"$info")
  revision=$(sed -n 's/^\t\t"Hash": "\(.*\)",$/\1/p' <<<"$info")

  if [ ! -f go.sum ]; then
    rm -f go.mod
    go mod init logbench.local/loki-build >/dev/null 2>&1
    # replace and exclude directives only apply in the main module, and Loki relies on its
    # forks (memberlist, objstore, regexp, ...): without them the build picks upstream
    # versions that do not compile against Loki. Its one local replace (./pkg/push) points
    # into the repository, outside the module's zip; the pseudo-version Loki requires for
    # that module is what the proxy serves instead.
    awk '{ sub(/\/\/.*/, "") }
      /^replace[ \t]*\(/ { block = "replace"; next }
      /^exclude[ \t]*\(/ { block = "exclude"; next }
      /^\)/ { block = ""; next }
      {
        kind = block
        if ($1 == "replace" || $1 == "exclude") { kind = $1; sub(/^[a-z]+[ \t]+/, "") }
        n = split($0, f, /[ \t]+/)
        if (f[1] == "") { for (i = 1; i < n; i++) f[i] = f[i + 1]; n-- }
      }
      kind == "exclude" && n == 2 { print "-exclude=" f[1] "@" f[2] }
      # A replacement without a version is a local path.
      kind == "replace" && f[n - 1] != "=>" {
        old = f[1]; if (f[2] != "=>") old = old "@" f[2]
        print "-replace=" old "=" f[n - 1] "@" f[n]
      }' "${loki_dir}/go.mod" | xargs go mod edit
    go mod edit -require "${module}@v${LOKI_VERSION}"
    printf 'package tools\n\nimport _ "%s/cmd/loki"\n' "$module" >tools.go
    go mod tidy >/dev/null
  fi

  echo "building loki v${LOKI_VERSION} (first time takes many minutes)" >&2
  # CGO off gives a static binary, with Go's own resolver, that runs in an image without
  # a libc; no netgo tag, which would change the net package and so every package above
  # it: the other builds (CGO off, -trimpath, no tags) then share their compiled
  # dependencies with this one. The version variables are what `loki -version` and
  # /loki/api/v1/status/buildinfo report.
  build=${module}/pkg/util/build
  CGO_ENABLED=0 go build -trimpath -o "${binary}.tmp" -ldflags "-s -w \
    -X ${build}.Version=${LOKI_VERSION} -X ${build}.Revision=${revision} \
    -X ${build}.Branch=v${LOKI_VERSION}" "${module}/cmd/loki"
  mv "${binary}.tmp" "$binary"
fi
ln -sfn "$(basename "$binary")" "${out}/loki"
