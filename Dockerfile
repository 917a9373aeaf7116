# Reroll's container image: a static binary on distroless, as user nonroot
# (65532), which the chart's and config/'s securityContext expect.
#
# Not built by `make test` or CI: this machine has no container engine. Build
# it where one runs:
#   docker build -t ghcr.io/reroll/reroll:v0.1.0 .
FROM golang:1.25 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY api/ api/
COPY internal/ internal/
ARG TARGETOS TARGETARCH
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o /out/reroll ./cmd/reroll

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/reroll /reroll
USER 65532:65532
EXPOSE 9090 8081
ENTRYPOINT ["/reroll"]
