# Reroll's container image, for those with a container engine: a static
# binary on distroless, as user nonroot (65532), which the chart's and
# config/'s securityContext expect.
#
# Releases and CI build the image without an engine (`make image`, see
# docs/release.md); this file builds the same binary, with the same script
# (hack/build.sh), and cmd/reroll's TestDockerfile checks that it copies
# every package ./cmd/reroll imports. Build it where an engine runs:
#   docker build --build-arg COMMIT=$(git rev-parse HEAD) \
#     --build-arg SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) -t ghcr.io/reroll/reroll:$(cat VERSION) .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY VERSION ./
COPY hack/build.sh hack/
COPY cmd/ cmd/
COPY api/ api/
COPY internal/ internal/
ARG TARGETOS TARGETARCH COMMIT=unknown SOURCE_DATE_EPOCH=0
RUN GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} COMMIT=${COMMIT} SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH} \
    hack/build.sh /out/reroll ./cmd/reroll

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/reroll /reroll
USER 65532:65532
EXPOSE 9090 8081
ENTRYPOINT ["/reroll"]
