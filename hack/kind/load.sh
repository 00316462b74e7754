#!/usr/bin/env bash
# Loads into the kind cluster the images of the e2e suite that its nodes do not hold:
# logbench's image IMG, which make docker-build built into the Docker engine, and, with
# KIND_IMAGES=offline, every archive of hack/images.sh (the node image preloads them;
# one built since is loaded here). up.sh runs it after each build of IMG.
# Usage: hack/kind/load.sh   (IMG, KIND_CLUSTER, KIND_IMAGES, KIND may be set)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMG=${IMG:-logbench:e2e}
docker_answers || die "no Docker engine answers: hack/kind/up.sh starts one"
"$KIND" get clusters 2>/dev/null | grep -qxF "$KIND_CLUSTER" || die "no kind cluster ${KIND_CLUSTER}: make test-e2e creates it"

log "loading ${IMG}"
"$KIND" load docker-image "$IMG" --name "$KIND_CLUSTER"
[ "$KIND_IMAGES" = offline ] || exit 0
for node in $("$KIND" get nodes --name "$KIND_CLUSTER"); do
  present=$(docker exec "$node" ctr --namespace=k8s.io images ls -q)
  while read -r archive; do
    image=$(archive_image "$archive")
    grep -qxF "$image" <<<"$present" && continue
    log "loading ${image} into ${node}"
    import_archive "$archive" docker exec -i "$node" ctr --namespace=k8s.io images import --all-platforms --digests
  done < <(suite_archives)
done
