# The same image `make image` builds without a container engine (tools/image): the static
# binary on an empty base holding only CA certificates, /etc/passwd with the non-root user
# 65532, /home/nonroot and /tmp. No shell, no package manager.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# Same flags as `make build`.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/reloader .
# The base filesystem, written by the same code as make image's base layer.
RUN cd tools/image && GOWORK=off go run . -base-tar /out/base.tar \
 && mkdir /out/rootfs && tar -xpf /out/base.tar -C /out/rootfs

FROM scratch
ARG VERSION=dev
COPY --from=build /out/rootfs/ /
# COPY does not keep the owner; the non-root user's home is its own.
COPY --from=build --chown=65532:65532 /out/rootfs/home/nonroot /home/nonroot
COPY --from=build /out/reloader /reloader
LABEL org.opencontainers.image.title=reloader \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.source=https://github.com/reloader/reloader \
      org.opencontainers.image.licenses=Apache-2.0
USER 65532:65532
WORKDIR /home/nonroot
EXPOSE 8080
ENTRYPOINT ["/reloader"]
