#!/usr/bin/env bash
# Loads into the running local cluster every image archive that images.sh built and its
# nodes' containerds do not hold yet (up.sh does the same when it starts the cluster).
# Usage: hack/local-cluster/load.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ "$(id -u)" = 0 ] || die "run as root: images are imported into the cluster's containerd"
running containerd || die "the local cluster is not running: make local-cluster-up"
import_images_everywhere
