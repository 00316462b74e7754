#!/usr/bin/env bash
# Prepares this machine's Docker engine so that `make docker-build` builds the repository's
# own Dockerfile although no image registry is reachable: it builds stand-ins for the
# Dockerfile's two base images offline and tags them with the names the Dockerfile uses,
# without the digests it pins them by (a digest names upstream's content, which a
# stand-in does not have),
#   golang:<go.mod's Go>-bookworm     Debian bookworm (debootstrap) + the Go toolchain that
#                                     go.mod needs, from the Go module proxy
#   gcr.io/distroless/static:nonroot  passwd/group, CA certificates, zoneinfo, uid 65532
# and installs the buildx CLI plugin, built from the Go module proxy, when the docker CLI
# has none: the Dockerfile's RUN --mount needs BuildKit, and a docker CLI without buildx
# falls back to the legacy builder.
# The golang image also gets this machine's extra CA certificates, which its TLS-intercepting
# egress needs (see add_extra_cas).
# Images this script did not make are left alone, and its own are remade only when
# go.mod's Go release or those certificates change; the root filesystems are kept as
# tarballs in IMAGE_CACHE, so that only the first run bootstraps Debian.
# Usage: hack/kind/offline-base-images.sh   (as root: debootstrap and file ownership)
#        hack/kind/offline-base-images.sh --build-args   prints the build arguments with
#          which make docker-build (DOCKER_BUILD_FLAGS) builds on the stand-ins
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# dockerfile_image ARG prints the default of the Dockerfile's build argument ARG, a base
# image pinned by digest, without its digest.
dockerfile_image() {
  sed -n "s/^ARG $1=\(.*\)@sha256:[0-9a-f]\{64\}\$/\1/p" "${REPO_ROOT}/Dockerfile"
}
GOLANG_IMAGE=$(dockerfile_image GOLANG_IMAGE)
DISTROLESS_IMAGE=$(dockerfile_image BASE_IMAGE)
# Marks the images this script made, which it may remake; others it leaves alone.
LABEL_MADE_BY=io.logbench.made-by
MADE_BY=hack/kind/offline-base-images.sh
LABEL_EXTRA_CAS=io.logbench.extra-ca-certificates
EXTRA_CAS=/usr/local/share/ca-certificates
# docker CLI 28's `docker build` runs `docker buildx build` once the plugin is there.
BUILDX_PLUGIN=${DOCKER_CONFIG:-${HOME}/.docker}/cli-plugins/docker-buildx
ARCH=$(dpkg --print-architecture)
# As the official images: what `go install` puts in /go/bin comes before Go's own
# binaries, and GOTOOLCHAIN=local, since the image's Go is the one its tag promises.
BASE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
GOLANG_PATH=/go/bin:/usr/local/go/bin:${BASE_PATH}

# The stand-ins are useless if the Dockerfile names other images: fail rather than build
# images nothing uses.
# shellcheck disable=SC2016 # the Dockerfile's lines, which name build arguments
if ! [[ "$GOLANG_IMAGE" =~ ^golang:[0-9.]+-bookworm$ ]] || [ "$DISTROLESS_IMAGE" != gcr.io/distroless/static:nonroot ] ||
  ! grep -q '^FROM --platform=$BUILDPLATFORM ${GOLANG_IMAGE} ' "${REPO_ROOT}/Dockerfile" ||
  ! grep -qx 'FROM ${BASE_IMAGE}' "${REPO_ROOT}/Dockerfile"; then
  die "the Dockerfile no longer builds FROM golang:<version>-bookworm and gcr.io/distroless/static:nonroot, pinned by digest in ARG GOLANG_IMAGE and BASE_IMAGE: update ${BASH_SOURCE[0]}"
fi

if [ "${1:-}" = --build-args ]; then
  echo "--build-arg GOLANG_IMAGE=${GOLANG_IMAGE} --build-arg BASE_IMAGE=${DISTROLESS_IMAGE}"
  exit 0
fi

# go_version prints the Go release go.mod needs: its toolchain line, else its go line.
# GO_VERSION overrides it.
go_version() {
  if [ -n "${GO_VERSION:-}" ]; then
    echo "${GO_VERSION#go}"
    return
  fi
  local version
  version=$(awk '$1 == "toolchain" {sub(/^go/, "", $2); print $2; exit}' "${REPO_ROOT}/go.mod")
  [ -n "$version" ] || version=$(awk '$1 == "go" {print $2; exit}' "${REPO_ROOT}/go.mod")
  # A go line without a patch release names no toolchain that the proxy serves.
  [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
    die "go.mod names Go ${version}, not a release: set GO_VERSION, e.g. GO_VERSION=${version}.0"
  echo "$version"
}

ensure_buildx() {
  if docker buildx version >/dev/null 2>&1; then
    log "the docker CLI has buildx: $(docker buildx version)"
    return
  fi
  local bin=${CACHE_DIR}/buildx-${BUILDX_VERSION}/docker-buildx
  if [ ! -x "$bin" ]; then
    log "building buildx ${BUILDX_VERSION} from the Go module proxy (a few minutes)"
    # `go install module@version` builds with the module's own go.mod, as its release
    # does; the version variables are what `docker buildx version` reports.
    local package=github.com/docker/buildx
    (
      cd "$CACHE_DIR"
      CGO_ENABLED=0 GOBIN="$(dirname "$bin")" GOFLAGS=-buildvcs=false go install -trimpath \
        -ldflags "-s -w -X ${package}/version.Version=${BUILDX_VERSION} -X ${package}/version.Package=${package}" \
        "${package}/cmd/buildx@${BUILDX_VERSION}"
    )
    mv "$(dirname "$bin")/buildx" "$bin"
  fi
  # A copy, not a link: wiping the cache must not break `docker build`.
  install -D -m 0755 "$bin" "$BUILDX_PLUGIN"
  docker buildx version >/dev/null || die "the docker CLI does not load ${BUILDX_PLUGIN}"
  log "installed ${BUILDX_PLUGIN}: $(docker buildx version)"
}

# bootstrap_debian prints a Debian bookworm minbase rootfs made once for both images.
# Kept until the run ends, so that a failed run resumes after debootstrap, the slow part.
bootstrap_debian() {
  local rootfs
  # git: `go` fetches modules the proxy lacks (GOPRIVATE, direct) with it; netbase:
  # /etc/services and /etc/protocols, which Go's net package reads.
  rootfs=$(debian_rootfs docker-base ca-certificates,git,netbase)
  slim_rootfs "$rootfs"
  # Image layers carry no device nodes nor logs of the bootstrap.
  rm -rf "${rootfs:?}"/dev/* "$rootfs"/var/log/*
  echo "$rootfs"
}

# import_tarball TARBALL IMAGE CHANGE... imports a rootfs tarball as IMAGE with the given
# Dockerfile instructions.
import_tarball() {
  local tarball=$1
  shift
  log "importing $1 from ${tarball}"
  docker_import "$@" <"$tarball"
}

# pack ROOTFS TARBALL writes ROOTFS as TARBALL.
pack() {
  rootfs_tar "$1" >"${2}.tmp"
  mv "${2}.tmp" "$2"
}

build_golang() {
  local version
  version=$(go_version)
  local tagged=${GOLANG_IMAGE#golang:}
  [ "$version" = "${tagged%-bookworm}" ] ||
    die "go.mod needs Go ${version}, which ${GOLANG_IMAGE} does not hold: update the Dockerfile and ${BASH_SOURCE[0]}"
  local cas stale=
  cas=$(extra_cas_digest)
  if docker_image_exists "$GOLANG_IMAGE"; then
    local made_here existing existing_cas
    made_here=$(label "$GOLANG_IMAGE" "$LABEL_MADE_BY")
    existing=$(docker image inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$GOLANG_IMAGE" |
      sed -n 's/^GOLANG_VERSION=//p')
    existing_cas=$(label "$GOLANG_IMAGE" "$LABEL_EXTRA_CAS")
    if [ -z "$made_here" ]; then
      log "${GOLANG_IMAGE} is present and was not made here (Go ${existing:-unknown}): kept"
      return
    fi
    if [ "$existing" = "$version" ] && [ "$existing_cas" = "$cas" ]; then
      log "${GOLANG_IMAGE} is present (Go ${existing}): kept"
      return
    fi
    log "${GOLANG_IMAGE} holds Go ${existing} or other CA certificates than this machine's: remaking it"
    stale=$(docker image inspect -f '{{.Id}}' "$GOLANG_IMAGE")
  fi
  local tarball=${IMAGE_CACHE}/docker-golang-${version}-bookworm-${ARCH}.rootfs.tar
  if [ ! -f "$tarball" ]; then
    local rootfs toolchain work=${IMAGE_CACHE}/rootfs-docker-golang
    rootfs=$(bootstrap_debian)
    # The proxy serves each Go release for each platform as a module whose content is a
    # GOROOT: what `go` itself downloads when GOTOOLCHAIN asks for a newer release.
    log "downloading Go ${version} from the Go module proxy"
    toolchain=$(cd / && go_module_dir "golang.org/toolchain@v0.0.1-go${version}.linux-${ARCH}")
    [ -f "${toolchain}/bin/go" ] || die "no Go ${version} toolchain from the Go module proxy"
    rm -rf "$work"
    cp -a "$rootfs" "$work"
    mkdir -p "$work/usr/local"
    cp -a "$toolchain" "$work/usr/local/go"
    # The module cache is read-only, and a zip keeps no execute bits: `go` sets them on
    # bin and pkg/tool when it switches to a downloaded toolchain, and so does this.
    chmod -R u+w "$work/usr/local/go"
    find "$work/usr/local/go/bin" "$work/usr/local/go/pkg/tool" -type f -exec chmod a+x {} +
    find "$work/usr/local/go/lib" -type f -name 'go_?*_?*_exec' -exec chmod a+x {} +
    # As the official image: any user may `go install` into /go/bin and /go/src.
    mkdir -p "$work/go/src" "$work/go/bin"
    chmod -R 1777 "$work/go"
    "$work/usr/local/go/bin/go" version >/dev/null || die "the Go toolchain does not run"
    pack "$work" "$tarball"
    rm -rf "$work"
  fi
  import_tarball "$tarball" "$GOLANG_IMAGE" \
    "ENV GOLANG_VERSION=${version}" "ENV GOTOOLCHAIN=local" "ENV GOPATH=/go" \
    "ENV PATH=${GOLANG_PATH}" "WORKDIR /go" 'CMD ["bash"]' "LABEL ${LABEL_MADE_BY}=${MADE_BY}"
  [ -z "$cas" ] || add_extra_cas
  # The image it replaces is ours and now untagged; one a container still uses stays.
  [ -z "$stale" ] || docker image rm "$stale" >/dev/null 2>&1 || true
}

# extra_cas_digest prints a digest of the CA certificates this machine adds to Debian's
# (update-ca-certificates' folder), or nothing when it adds none.
extra_cas_digest() {
  [ -d "$EXTRA_CAS" ] || return 0
  local files
  files=$(find "$EXTRA_CAS" -type f -name '*.crt' | LC_ALL=C sort)
  [ -n "$files" ] || return 0
  # shellcheck disable=SC2086 # one path a line, none with blanks
  cat $files | sha256sum | cut -c1-16
}

label() { docker image inspect -f "{{index .Config.Labels \"$2\"}}" "$1"; }

# This machine reaches the Go module proxy through a TLS-intercepting egress whose CA
# (beside others) sits in EXTRA_CAS: without it, the build's `go mod download` fails
# certificate verification, as it would in the official image. The certificates go in a
# layer of their own on top of the cached Debian+Go layer, since that CA may change from
# one machine to the next; a label records which ones, so a changed set remakes the layer.
add_extra_cas() {
  local container=logbench-offline-base-cas-$$
  log "adding this machine's CA certificates (${EXTRA_CAS}) to ${GOLANG_IMAGE}"
  trap 'docker rm -f "$container" >/dev/null 2>&1 || true' EXIT
  tar -C "$EXTRA_CAS" -c . | docker run -i --name "$container" --network none "$GOLANG_IMAGE" \
    sh -ec 'tar -C /usr/local/share/ca-certificates --no-same-owner -x; update-ca-certificates >/dev/null 2>&1'
  docker commit --change 'CMD ["bash"]' --change "LABEL ${LABEL_EXTRA_CAS}=$(extra_cas_digest)" \
    "$container" "$GOLANG_IMAGE" >/dev/null
  docker rm "$container" >/dev/null
  trap - EXIT
}

# The distroless image holds no shell, package manager nor libc: only the files a static
# binary reads, taken from the same Debian packages as upstream's (ca-certificates, tzdata,
# netbase), and the users of upstream's static image.
build_distroless() {
  if docker_image_exists "$DISTROLESS_IMAGE"; then
    log "${DISTROLESS_IMAGE} is present: kept"
    return
  fi
  local tarball=${IMAGE_CACHE}/docker-distroless-static-nonroot-bookworm-${ARCH}.rootfs.tar
  if [ ! -f "$tarball" ]; then
    local rootfs work=${IMAGE_CACHE}/rootfs-docker-distroless
    rootfs=$(bootstrap_debian)
    rm -rf "$work"
    mkdir -p "$work"/{etc/ssl/certs,usr/share,root,home/nonroot,tmp,var/lib}
    cp -a "$rootfs/etc/ssl/certs/ca-certificates.crt" "$work/etc/ssl/certs/"
    [ -s "$work/etc/ssl/certs/ca-certificates.crt" ] || die "no CA certificates in the Debian rootfs"
    cp -a "$rootfs/usr/share/zoneinfo" "$work/usr/share/"
    cp -a "$rootfs/etc/services" "$rootfs/etc/protocols" "$work/etc/"
    cat >"$work/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
    cat >"$work/etc/group" <<'EOF'
root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
EOF
    # Go's resolver consults nsswitch.conf for the order of files and DNS.
    echo 'hosts: files dns' >"$work/etc/nsswitch.conf"
    sed 's/^PRETTY_NAME=.*/PRETTY_NAME="Distroless"/' "$rootfs/etc/os-release" >"$work/etc/os-release"
    chmod 0700 "$work/root" "$work/home/nonroot"
    chmod 1777 "$work/tmp"
    chown 65532:65532 "$work/home/nonroot"
    pack "$work" "$tarball"
    rm -rf "$work"
  fi
  import_tarball "$tarball" "$DISTROLESS_IMAGE" \
    "ENV PATH=${BASE_PATH}" "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt" \
    "USER 65532" "WORKDIR /home/nonroot" "LABEL ${LABEL_MADE_BY}=${MADE_BY}"
}

[ "$(id -u)" = 0 ] || die "run as root: debootstrap and the images' file owners need it"
docker_answers || die "no Docker engine answers: start one (hack/kind/dockerd.sh up)"
mkdir -p "$IMAGE_CACHE"
ensure_buildx
build_golang
build_distroless
# The Debian rootfs only feeds the tarballs, which now exist for every image built here.
remove_rootfs "${IMAGE_CACHE}/rootfs-docker-base"
log "base images ready: ${GOLANG_IMAGE}, ${DISTROLESS_IMAGE}"
