# Builds the logbench binary, which serves as operator, agent and local runner alike.
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
# Modules are downloaded in a layer of their own, so that source changes reuse it.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download

COPY api/ api/
COPY cmd/ cmd/
COPY config/crd/ config/crd/
COPY controllers/ controllers/
COPY internal/ internal/

# GOARCH is left unset when TARGETARCH is, so that the image builds for the host
# platform without buildx.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o logbench ./cmd/logbench

# distroless/static holds no shell nor package manager: only the static binary runs.
FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/logbench /logbench
USER 65532:65532

ENTRYPOINT ["/logbench"]
