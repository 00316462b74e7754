# shellcheck shell=bash
# The variables are used by the scripts that source this file.
# shellcheck disable=SC2034
# Go builds of pinned modules from the Go module proxy, in one flavour: CGO off, -trimpath
# and stripped, as logbench's own builds, so that they share compiled packages in Go's
# build cache (client-go between Kubernetes, the network policy controller and logbench).
# Sourced after common.sh, not run.

# go_module_dir MODULE@VERSION prints the folder of MODULE at VERSION in Go's module cache,
# downloading it from the proxy first if needed.
go_module_dir() { go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'; }

# go_mod_copy GOMOD KIND... repeats the directives of each KIND (require, replace,
# exclude) of the go.mod file GOMOD in the go.mod of the current folder. A replacement by
# a local path is left out: it points into GOMOD's own tree.
go_mod_copy() {
  local gomod=$1
  shift
  awk -v kinds=" $* " '{ sub(/\/\/.*/, "") }
    /^(require|replace|exclude)[ \t]*\(/ { block = $1; next }
    /^\)/ { block = ""; next }
    {
      kind = block
      if ($1 == "require" || $1 == "replace" || $1 == "exclude") { kind = $1; sub(/^[a-z]+[ \t]+/, "") }
      n = split($0, f, /[ \t]+/)
      if (f[1] == "") { for (i = 1; i < n; i++) f[i] = f[i + 1]; n-- }
      if (n < 2 || index(kinds, " " kind " ") == 0) next
    }
    kind != "replace" { print "-" kind "=" f[1] "@" f[2] }
    # A replacement without a version is a local path.
    kind == "replace" && f[n - 1] != "=>" {
      old = f[1]; if (f[2] != "=>") old = old "@" f[2]
      print "-replace=" old "=" f[n - 1] "@" f[n]
    }' "$gomod" | xargs go mod edit
}

# go_module_init [--edit FUNCTION [--stamp TEXT]] [--tags TAGS] DIR MODULE@VERSION
# [PACKAGE...] makes DIR a throwaway module that requires MODULE at VERSION and imports
# each PACKAGE (tools.go), so that the module's own go.mod rules the dependencies. FUNCTION,
# run in DIR after go mod init with MODULE@VERSION, adds what the main module must say for
# the build to resolve (replace and exclude directives, which apply only there, or another
# module's requirements). TEXT names what FUNCTION reads besides MODULE@VERSION (a
# version, a file's checksum). The dependencies are resolved for this platform's build
# with TAGS only, as go_build will build: go mod tidy would resolve them for every
# platform and tag, which for Loki fetches a third more modules and takes about twice
# as long (docs/development.md). A module made already is kept unless it lacks one of
# the PACKAGEs or was made with another TEXT or TAGS. Without PACKAGE, DIR's own Go files
# say what to import, and the module is made again each time.
go_module_init() {
  local edit='' stamp='' tags=''
  if [ "$1" = --edit ]; then
    edit=$2
    shift 2
  fi
  if [ "$1" = --stamp ]; then
    stamp=$2
    shift 2
  fi
  if [ "$1" = --tags ]; then
    tags=$2
    shift 2
  fi
  local dir=$1 module=$2
  shift 2
  local imports package
  imports=$(
    [ -z "$stamp" ] || printf '// Made with %s.\n' "$stamp"
    [ -z "$tags" ] || printf '// Resolved for the build tags %s.\n' "$tags"
    printf 'package tools\n\nimport (\n'
    for package in "$@"; do printf '\t_ "%s"\n' "$package"; done
    printf ')\n'
  )
  mkdir -p "$dir"
  (
    cd "$dir" || exit 1
    if [ $# -gt 0 ] && [ -f go.sum ] && [ "$(cat tools.go 2>/dev/null)" = "$imports" ]; then
      exit 0
    fi
    rm -f go.mod go.sum tools.go
    go mod init logbench.local/build >/dev/null 2>&1
    [ -z "$edit" ] || "$edit" "$module"
    go mod edit -require "$module"
    [ $# -eq 0 ] || printf '%s\n' "$imports" >tools.go
    go list -mod=mod -deps ${tags:+-tags "$tags"} "${@:-./...}" >/dev/null
  )
}

# go_build [-tags TAGS] [-X NAME=VALUE]... DIR OUT PACKAGE... builds PACKAGE of the module
# in DIR as OUT, a file that appears only once complete, or, when OUT ends with a slash,
# each PACKAGE into that folder under its own name. -X sets a string variable at link
# time (a version that the program reports).
go_build() {
  local tags='' ldflags='-s -w'
  while :; do
    case "$1" in
      -tags)
        tags=$2
        shift 2
        ;;
      -X)
        ldflags+=" -X $2"
        shift 2
        ;;
      *) break ;;
    esac
  done
  local dir=$1 out=$2
  shift 2
  local target=$out
  [[ "$out" == */ ]] || target=${out}.tmp
  mkdir -p "$(dirname "$target")"
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath ${tags:+-tags "$tags"} -ldflags "$ldflags" -o "$target" "$@")
  [[ "$out" == */ ]] || mv "$target" "$out"
}

# go_module_build DIR MODULE@VERSION PACKAGE OUT builds PACKAGE of MODULE as OUT in the
# throwaway module DIR, unless OUT is there.
go_module_build() {
  local dir=$1 module=$2 package=$3 out=$4
  [ -x "$out" ] && return
  log "building ${package} from ${module} (first time takes several minutes)"
  go_module_init "$dir" "$module" "$package"
  go_build "$dir" "$out" "$package"
}

# build_netpol builds NETPOL_BINARY from hack/local-cluster/netpol, kube-router's network
# policy controller alone at the version its go.mod pins, which both clusters run. Its
# other requirements are at least logbench's, as Kubernetes builds (hack/build-kube.sh),
# so that the three share client-go and the packages around it.
NETPOL_BINARY=${REPO_ROOT}/bin/local-cluster/netpol
build_netpol() { go_build "${REPO_ROOT}/hack/local-cluster/netpol" "$NETPOL_BINARY" .; }
