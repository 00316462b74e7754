#!/usr/bin/env bash
# Builds the images a release publishes beside the operator's (images/images.txt) for
# PLATFORMS, each as an OCI layout archive in DIR, and writes DIR/images.txt, one
# "<archive> <reference>" a line, which the release's publish job pushes and signs as it
# is: the digest signed is that of the image built here.
# Usage: hack/release-images.sh DIR   (VERSION, REGISTRY and PLATFORMS from the environment;
#        CONTAINER_TOOL docker by default, with buildx)
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:?usage: $0 DIR}
: "${VERSION:?VERSION must name the release}" "${REGISTRY:?REGISTRY must name the registry, e.g. ghcr.io/logbench}"
PLATFORMS=${PLATFORMS:-linux/amd64,linux/arm64}
CONTAINER_TOOL=${CONTAINER_TOOL:-docker}
builder=logbench-release-images

mkdir -p "$dir"
: >"${dir}/images.txt"
"$CONTAINER_TOOL" buildx create --name "$builder" >/dev/null
trap '"$CONTAINER_TOOL" buildx rm "$builder"' EXIT
while read -r folder context target tag base; do
  case "$folder" in '' | '#'*) continue ;; esac
  reference=${REGISTRY}/${tag//VERSION/$VERSION}
  archive=${dir}/$(tr -c 'a-zA-Z0-9.\n-' - <<<"${tag//VERSION/$VERSION}").tar
  echo "building ${reference} FROM ${base}" >&2
  "$CONTAINER_TOOL" buildx build --builder "$builder" --platform "$PLATFORMS" \
    --file "${REPO_ROOT}/images/${folder}/Dockerfile" --target "$target" --build-arg "BASE=${base}" \
    --output "type=oci,dest=${archive}" "${REPO_ROOT}/${context}"
  echo "$(basename "$archive") ${reference}" >>"${dir}/images.txt"
done <"${REPO_ROOT}/images/images.txt"
