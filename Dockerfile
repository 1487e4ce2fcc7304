# syntax=docker/dockerfile:1
# The ledgermq image: the static binary alone, run as a non-root user.
#   make image            (docker or podman)
#   docker run --rm ledgermq:dev namesrv --listen :9876 --http :9880
# The operator endpoints (/livez, /readyz on http_addr / --http) are the
# probes; the image has no shell and no HEALTHCHECK.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=none
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/ledgermq ./cmd/ledgermq \
 && mkdir -p /out/data

FROM scratch
COPY --from=build /out/ledgermq /ledgermq
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
WORKDIR /data
EXPOSE 9876 10911 40911 10913
ENTRYPOINT ["/ledgermq"]
CMD ["--help"]
