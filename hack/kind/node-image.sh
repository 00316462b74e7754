#!/usr/bin/env bash
# Builds a kind node image with no registry: what `kind build node-image` makes from the
# kindest/base image and registry pulls, made from Debian's packages and the Go module
# proxy instead. The node runs kind's own entrypoint, systemd units and containerd
# configuration (from the kind module) on Debian bookworm with its containerd and runc;
# Kubernetes comes from hack/build-kube.sh, and the images kubeadm asks for are built at
# the versions it names (etcd) and preloaded, with the images the e2e suite runs and the
# local cluster's CoreDNS (hack/images.sh) and kind's default storage (local-path-provisioner).
# The one difference in networking: where kind would apply kindnetd, the node's pods share
# a CNI bridge written into the image (up.sh gives each node of several its own range and
# routes), and the local cluster's network policy controller runs as a DaemonSet
# (network_files).
# Usage: hack/kind/node-image.sh   (as root, with Docker; KIND_VERSION, KIND_NODE_IMAGE)
#   Prints the node image's reference on stdout.
#        hack/kind/node-image.sh --network-files DIR
#   Writes the node's network files into DIR only (no root, no Docker), for the tests.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NODE_IMAGE=$KIND_NODE_IMAGE
BASE_IMAGE=${IMAGE_REGISTRY}/kind-base:${KIND_VERSION}
KUBE_BASE_IMAGE=${IMAGE_REGISTRY}/kind-kube-base:bookworm
BUILD_CONTAINER=logbench-kind-node-build
PRELOADED_LABEL=io.logbench.preloaded
# The image of the local cluster's network policy controller, at the kube-router version
# its module pins.
NETPOL_IMAGE=${IMAGE_REGISTRY}/kube-router-netpol:$(awk '$1 == "github.com/cloudnativelabs/kube-router/v2" {print $2}' \
  "${REPO_ROOT}/hack/local-cluster/netpol/go.mod")

# import_rootfs FOLDER IMAGE CHANGE... makes IMAGE of the debian_rootfs FOLDER, then
# removes FOLDER.
import_rootfs() {
  local rootfs=$1
  shift
  slim_rootfs "$rootfs"
  rootfs_tar "$rootfs" | docker_import "$@"
  remove_rootfs "$rootfs"
}

# build_base makes kind's base image (images/base/Dockerfile of the kind module) from
# Debian's packages: the same files and units, Debian's containerd, runc and CNI plugins.
build_base() {
  docker_image_exists "$BASE_IMAGE" && return
  local rootfs
  rootfs=$(debian_rootfs kind-node systemd,systemd-sysv,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,fuse-overlayfs,bash,ca-certificates,curl,jq,procps,containerd,runc,containernetworking-plugins)
  log "assembling kind's base image ${BASE_IMAGE}"
  local files=${KIND_DIR}/images/base/files
  install -m 0755 "$files"/usr/local/bin/* "$rootfs/usr/local/bin/"
  mkdir -p "$rootfs/kind/bin" "$rootfs/LICENSES" "$rootfs/etc/containerd" "$rootfs/etc/kubernetes/manifests" \
    "$rootfs/etc/systemd/system/kubelet.service.d"
  install -m 0644 "$files"/kind/README.txt "$rootfs/kind/"
  install -m 0755 "$files"/kind/bin/* "$rootfs/kind/bin/"
  install -m 0644 "$files"/LICENSES/* "$rootfs/LICENSES/"
  install -m 0644 "$files"/etc/crictl.yaml "$rootfs/etc/"
  install -m 0644 "$files"/etc/containerd/* "$rootfs/etc/containerd/"
  install -m 0644 "$files"/etc/default/* "$rootfs/etc/default/"
  install -m 0644 "$files"/etc/sysctl.d/* "$rootfs/etc/sysctl.d/"
  find "$files/etc/systemd/system" -maxdepth 1 -type f -exec install -m 0644 -t "$rootfs/etc/systemd/system/" {} +
  install -m 0644 "$files"/etc/systemd/system/kubelet.service.d/* "$rootfs/etc/systemd/system/kubelet.service.d/"
  # kind's units and configuration expect its own builds under /usr/local.
  ln -sf /usr/bin/containerd "$rootfs/usr/local/bin/containerd"
  mkdir -p "$rootfs/opt/cni"
  ln -sfn /usr/lib/cni "$rootfs/opt/cni/bin"
  if lacks_sys_resource; then
    # Privileged pods (kube-proxy) would ask for the capability too: the node's runc is
    # the wrapper, found before Debian's in PATH, and containerd leaves oom_score_adj.
    install -m 0755 "${REPO_ROOT}/hack/kind/runc-without-sys-resource" "$rootfs/usr/local/sbin/runc"
    sed -i 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' "$rootfs/etc/containerd/config.toml"
  fi
  # The steps of kind's Dockerfile after its package installation.
  chroot "$rootfs" sh -ec '
    find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete
    rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
      /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
      /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
    echo ReadKMsg=no >> /etc/systemd/journald.conf
    ln -sf /usr/lib/systemd/systemd /sbin/init
    systemctl enable kubelet.service containerd.service undo-mount-hacks.service
    systemctl mask systemd-binfmt.service
    ctr oci spec | jq ".hooks.createContainer[.hooks.createContainer | length] |= . + {\"path\": \"/kind/bin/mount-product-files.sh\"}" |
      jq "del(.process.rlimits)" > /etc/containerd/cri-base.json'
  import_rootfs "$rootfs" "${BASE_IMAGE}-rootfs" 'ENV container=docker' \
    'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]'
  # systemd stops on SIGRTMIN+3, which only a build sets (docker import takes no STOPSIGNAL).
  local context
  context=$(mktemp -d)
  printf 'FROM %s\nSTOPSIGNAL SIGRTMIN+3\n' "${BASE_IMAGE}-rootfs" >"$context/Dockerfile"
  build_quietly "$BASE_IMAGE" "$context"
  rm -rf "$context"
  docker rmi "${BASE_IMAGE}-rootfs" >/dev/null
}

# kube_image IMAGE BINARY PATH [ENTRYPOINT] makes IMAGE of the Kubernetes base image
# with BINARY at PATH, where the upstream image of the same name has it.
kube_image() {
  docker_image_exists "$1" || build_kube_image "$@"
}

# build_kube_image IMAGE BINARY PATH [ENTRYPOINT] builds what kube_image makes, even if
# IMAGE exists: Docker's build cache keeps the image when BINARY did not change.
build_kube_image() {
  local image=$1 binary=$2 path=$3 entrypoint=${4:-}
  local context
  context=$(mktemp -d)
  cp "$binary" "$context/binary"
  {
    printf 'FROM %s\nCOPY binary %s\n' "$KUBE_BASE_IMAGE" "$path"
    [ -z "$entrypoint" ] || printf 'ENTRYPOINT ["%s"]\n' "$entrypoint"
  } >"$context/Dockerfile"
  build_quietly "$image" "$context"
  rm -rf "$context"
}

# build_quietly IMAGE CONTEXT builds CONTEXT's Dockerfile, which needs nothing of BuildKit.
build_quietly() { DOCKER_BUILDKIT=0 docker build -q -t "$1" "$2" 2>/dev/null >/dev/null || die "building $1 failed"; }

# build_kube_images makes the images kubeadm lists for KUBE_VERSION from the binaries it
# runs in them, but pause, which the node's containerd names, and CoreDNS, which up.sh
# has kubeadm take from hack/images.sh.
build_kube_images() {
  if ! docker_image_exists "$KUBE_BASE_IMAGE"; then
    # kube-proxy and the network policy controller program the node's netfilter with
    # the image's own iptables, ipset and conntrack.
    import_rootfs "$(debian_rootfs kind-kube iptables,ipset,conntrack,ca-certificates)" "$KUBE_BASE_IMAGE" \
      'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin'
  fi
  local image name tag
  for image in $("${KUBE_BIN}/kubeadm" config images list --kubernetes-version "v${KUBE_VERSION}"); do
    name=${image%:*}
    name=${name##*/}
    tag=${image##*:}
    case "$name" in
      kube-*) kube_image "$image" "${KUBE_BIN}/${name}" "/usr/local/bin/${name}" ;;
      etcd)
        local etcd_version=v${tag%-*}
        go_module_build "${CACHE_DIR}/etcd-build-${etcd_version}" "go.etcd.io/etcd/server/v3@${etcd_version}" \
          go.etcd.io/etcd/server/v3 "${KIND_NODE_BIN}/etcd-${etcd_version}"
        kube_image "$image" "${KIND_NODE_BIN}/etcd-${etcd_version}" /usr/local/bin/etcd
        ;;
      pause | coredns) continue ;;
      *) die "kubeadm lists ${image}, which this script does not know how to build" ;;
    esac
    KUBE_IMAGES+=("$image")
  done
}

# build_storage_images makes kind's default storage: local-path-provisioner, whose helper
# pods run the Kubernetes base image's shell.
build_storage_images() {
  STORAGE_IMAGE=${IMAGE_REGISTRY}/local-path-provisioner:v${LOCAL_PATH_PROVISIONER_VERSION}
  local binary=${KIND_NODE_BIN}/local-path-provisioner-v${LOCAL_PATH_PROVISIONER_VERSION}
  go_module_build "${CACHE_DIR}/local-path-provisioner-build" \
    "github.com/rancher/local-path-provisioner@v${LOCAL_PATH_PROVISIONER_VERSION}" \
    github.com/rancher/local-path-provisioner "$binary"
  kube_image "$STORAGE_IMAGE" "$binary" /usr/local/bin/local-path-provisioner
}

# storage_manifest prints kind's default storage manifest with the images built here.
storage_manifest() {
  local source=${KIND_DIR}/pkg/build/nodeimage/const_storage.go
  local provisioner helper
  provisioner=$(sed -n 's/^const storageProvisionerImage = "\(.*\)"$/\1/p' "$source")
  helper=$(sed -n 's/^const storageHelperImage = "\(.*\)"$/\1/p' "$source")
  if [ -z "$provisioner" ] || [ -z "$helper" ]; then
    die "no storage images found in ${source}"
  fi
  # shellcheck disable=SC2016 # the backquotes of a Go raw string, not a command
  sed -n '/^const defaultStorageManifest = `$/,/^`$/p' "$source" | sed '1d;$d' |
    sed -e "s#\` + storageProvisionerImage + \`#${STORAGE_IMAGE}#" -e "s#\` + storageHelperImage + \`#${KUBE_BASE_IMAGE}#"
}

# build_netpol_image makes the image of the network policy controller from the binary the
# local cluster runs (one build of hack/local-cluster/netpol for both).
build_netpol_image() {
  build_netpol
  build_kube_image "$NETPOL_IMAGE" "$NETPOL_BINARY" /usr/local/bin/netpol /usr/local/bin/netpol
}

# network_files DIR writes the node's network into DIR, at its paths in the node: the
# pods share a CNI bridge (bridge and host-local from Debian's plugins, the first node's
# range), which enforces no NetworkPolicy; kind's default CNI manifest, which kind applies
# where its own node image has kindnetd, runs the network policy controller that does.
network_files() {
  mkdir -p "$1/etc/cni/net.d" "$1/kind/manifests"
  cp "${REPO_ROOT}/hack/kind/cni-bridge.conflist" "${1}${CNI_CONFIG}"
  sed "s#@NETPOL_IMAGE@#${NETPOL_IMAGE}#" "${REPO_ROOT}/hack/kind/netpol.yaml" >"$1/kind/manifests/default-cni.yaml"
}

build_node() {
  log "building the node image ${NODE_IMAGE}"
  docker rm -f "$BUILD_CONTAINER" >/dev/null 2>&1 || true
  docker run -d --name "$BUILD_CONTAINER" --privileged --security-opt seccomp=unconfined \
    --entrypoint sleep "$BASE_IMAGE" infinity >/dev/null
  trap 'docker rm -f "$BUILD_CONTAINER" >/dev/null 2>&1 || true' EXIT
  local node=(docker exec -i "$BUILD_CONTAINER")
  local binary
  for binary in kubeadm kubelet kubectl; do
    docker cp "${KUBE_BIN}/${binary}" "${BUILD_CONTAINER}:/usr/bin/${binary}"
  done
  docker cp "${KIND_NODE_BIN}/crictl-v${CRICTL_VERSION}" "${BUILD_CONTAINER}:/usr/local/bin/crictl"
  "${node[@]}" sh -c "mkdir -p /kind/manifests && echo v${KUBE_VERSION} > /kind/version"
  local network
  network=$(mktemp -d)
  network_files "$network"
  tar -C "$network" -c . | "${node[@]}" tar -C / -x --no-overwrite-dir
  rm -rf "$network"
  storage_manifest | "${node[@]}" sh -c 'cat > /kind/manifests/default-storage.yaml'

  "${node[@]}" bash -c 'nohup containerd >/dev/null 2>&1 &'
  wait_for "containerd in the build container" 60 "${node[@]}" ctr version
  # kind labels preloaded images pinned, which Debian's containerd 1.6 does not know: the
  # kubelet may collect them when the disk is 85% full, and nothing could pull them again.
  local import=(ctr --namespace=k8s.io images import --all-platforms --no-unpack --digests)
  local archive
  log "preloading ${KUBE_IMAGES[*]} ${STORAGE_IMAGE} ${KUBE_BASE_IMAGE} ${NETPOL_IMAGE}"
  docker save "${KUBE_IMAGES[@]}" "$STORAGE_IMAGE" "$KUBE_BASE_IMAGE" "$NETPOL_IMAGE" |
    "${node[@]}" "${import[@]}" - >/dev/null
  # The images the e2e suite runs, as hack/images.sh archived them for the local cluster;
  # the pause image is also the node's sandbox image, under the name containerd's config
  # gives.
  for archive in "${SUITE_ARCHIVES[@]}"; do
    log "preloading $(archive_image "$archive")"
    import_archive "$archive" "${node[@]}" "${import[@]}"
  done
  local sandbox
  sandbox=$("${node[@]}" sed -n 's/^ *sandbox_image = "\(.*\)"$/\1/p' /etc/containerd/config.toml)
  "${node[@]}" ctr --namespace=k8s.io images tag --force "${PAUSE_IMAGE}" "$sandbox" >/dev/null
  "${node[@]}" pkill containerd || true
  sleep 1
  docker commit --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
    --change "LABEL ${PRELOADED_LABEL}=$(preloaded)" "$BUILD_CONTAINER" "$NODE_IMAGE" >/dev/null
}

# preloaded prints the suite's archives the node image holds, the network policy
# controller's image and a digest of the network files, which the image's label records:
# a pinned version, controller or network that changes makes the image again.
preloaded() {
  local network
  network=$(mktemp -d)
  network_files "$network"
  printf '%s,%s,network-%s\n' "$(basename -a "${SUITE_ARCHIVES[@]}" | paste -sd, -)" \
    "$(docker image inspect -f '{{.Id}}' "$NETPOL_IMAGE")" "$(tar -C "$network" -c --sort=name --mtime=@0 --owner=0 --group=0 . | sha256sum | cut -c1-12)"
  rm -rf "$network"
}

if [ "${1:-}" = --network-files ]; then
  [ -n "${2:-}" ] || die "usage: $0 --network-files DIR"
  network_files "$2"
  exit 0
fi

docker_answers || die "no Docker engine answers: start one (hack/kind/dockerd.sh up)"
mkdir -p "$IMAGE_CACHE" "$KIND_NODE_BIN"
# The kind module holds the base image's files and the default storage manifest.
KIND_DIR=$(go_module_dir "sigs.k8s.io/kind@${KIND_VERSION}")
# The e2e suite's images, as the local cluster builds them (once), beside the node's parts.
"${REPO_ROOT}/hack/images.sh" pause coredns cnpg postgres fluentbit rsyslog loki otelcol prometheus \
  >"${IMAGE_CACHE}/kind-images-build.log" 2>&1 &
images_build=$!
"${REPO_ROOT}/hack/build-kube.sh" "$KUBE_BIN" kubeadm kubelet kubectl kube-apiserver \
  kube-controller-manager kube-scheduler kube-proxy
go_module_build "${CACHE_DIR}/crictl-build-v${CRICTL_VERSION}" "sigs.k8s.io/cri-tools@v${CRICTL_VERSION}" \
  sigs.k8s.io/cri-tools/cmd/crictl "${KIND_NODE_BIN}/crictl-v${CRICTL_VERSION}"
build_base
KUBE_IMAGES=()
build_kube_images
build_netpol_image
build_storage_images
wait "$images_build" || die "building the e2e images failed: see ${IMAGE_CACHE}/kind-images-build.log"
mapfile -t SUITE_ARCHIVES < <(suite_archives)
if [ "$(docker image inspect -f "{{index .Config.Labels \"${PRELOADED_LABEL}\"}}" "$NODE_IMAGE" 2>/dev/null)" != "$(preloaded)" ]; then
  build_node
fi
echo "$NODE_IMAGE"
