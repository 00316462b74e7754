# Builds the logbench binary, which serves as operator, agent and local runner alike.
# The builder stage runs on the build machine's platform and cross-compiles for the
# target's (BuildKit sets both), so that a multi-arch build (make docker-buildx) runs no
# emulated compiler.
#
# Both base images are pinned by the digest of their multi-platform index, the tag kept
# for the reader, so that a release builds from the images its commit names and not from
# whatever a tag points at on the day. The golang tag is go.mod's Go release: the image
# sets GOTOOLCHAIN=local. GOLANG_IMAGE and BASE_IMAGE are build arguments only so that
# hack/kind/offline-base-images.sh can build on its stand-ins, which carry no digest.
ARG GOLANG_IMAGE=golang:1.26.8-bookworm@sha256:f4191582e1522dfc5980a6bdc0309a756f9697f3e7d0f199c7e26fc82ab324fd
ARG BASE_IMAGE=gcr.io/distroless/static:nonroot@sha256:e2e927ec666bae08560abb3c55d0659eceabb657f56b6782ab500a9fc7f555e3

FROM --platform=$BUILDPLATFORM ${GOLANG_IMAGE} AS builder
ARG TARGETOS
ARG TARGETARCH
# The release the binary reports (logbench version, logbench_build_info): the Makefile
# passes its VERSION, COMMIT and DATE; left empty, the binary says 0.0.0-dev.
ARG VERSION
ARG COMMIT
ARG DATE

WORKDIR /workspace
# Modules are downloaded in a layer of their own, so that source changes reuse it.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download

COPY api/ api/
COPY cmd/ cmd/
COPY config/crd/ config/crd/
COPY controllers/ controllers/
COPY internal/ internal/
COPY logbench_counter/countersql/ logbench_counter/countersql/

# GOARCH is left unset when TARGETARCH is, so that the image builds for the host
# platform without buildx.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w \
      -X github.com/logbench/logbench/internal/version.Version=${VERSION} \
      -X github.com/logbench/logbench/internal/version.Commit=${COMMIT} \
      -X github.com/logbench/logbench/internal/version.Date=${DATE}" \
    -o logbench ./cmd/logbench

# distroless/static holds no shell nor package manager: only the static binary runs.
FROM ${BASE_IMAGE}
ARG VERSION
ARG COMMIT
LABEL org.opencontainers.image.source="https://github.com/logbench/logbench" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
WORKDIR /
COPY --from=builder /workspace/logbench /logbench
USER 65532:65532

ENTRYPOINT ["/logbench"]
