# Multi-stage build of a static reloader binary on a distroless, non-root base.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# Same flags as `make build`.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/reloader .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/reloader /reloader
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/reloader"]
