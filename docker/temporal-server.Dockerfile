# docker-compose.yml's Temporal server: the temporalio/server image of tools/cluster/versions.json
# with its temporal-server replaced by the project's build of tools/cluster/temporal-server (the
# server (temporal.NewServer) with our authorizer and claim mapper, authz.go), as scripts/provision-cluster.sh
# builds it for `mpf cluster up`: from the Go module proxy, at the versions go.mod and go.sum pin
# (-mod=readonly: a go.sum that does not match refuses the build), CGO off, stripped.
# Without MPF_CLUSTER_AUTH=1 the binary runs as the upstream one (compose's entrypoint passes
# --allow-no-auth); with it, compose's entrypoint names "mpf" as authorizer and claim mapper and
# starts the internal frontend too, as `mpf cluster up` does (tools/cluster/temporal-server.ts).
#   docker compose build temporal
ARG TEMPORAL_SERVER_VERSION=1.29.1

FROM golang:1.25-bookworm AS build
ARG TEMPORAL_SERVER_VERSION
ENV GOPROXY=https://proxy.golang.org,direct GOFLAGS="-buildvcs=false -mod=readonly" CGO_ENABLED=0
WORKDIR /src
COPY tools/cluster/temporal-server/go.mod tools/cluster/temporal-server/go.sum ./
RUN grep -q "go.temporal.io/server v${TEMPORAL_SERVER_VERSION}\$" go.mod && go mod download
COPY tools/cluster/temporal-server/*.go ./
RUN go build -ldflags "-s -w" -o /out/temporal-server . \
 && /out/temporal-server --version | grep -q " ${TEMPORAL_SERVER_VERSION}\$"
# The server's own config template and dynamic config for Docker, from the same module version:
# compose's entrypoint starts this binary itself (as `mpf cluster up` does), not through the image's script.
RUN mod="$(go list -m -f '{{.Dir}}' go.temporal.io/server)" \
 && mkdir -p /out/config/dynamicconfig \
 && cp "$mod/config/docker.yaml" /out/config/docker.yaml \
 && cp "$mod/config/dynamicconfig/docker.yaml" /out/config/dynamicconfig/docker.yaml

FROM temporalio/server:${TEMPORAL_SERVER_VERSION}
COPY --from=build --chmod=755 /out/temporal-server /usr/local/bin/temporal-server
COPY --from=build --chmod=644 /out/config/docker.yaml /etc/temporal/config/docker.yaml
COPY --from=build --chmod=644 /out/config/dynamicconfig/docker.yaml /etc/temporal/config/dynamicconfig/docker.yaml
# What the image's config template has no variable for (the tokens' audience), and the dynamic
# config of authorisation; both read only with MPF_CLUSTER_AUTH=1 (compose's entrypoint).
COPY --chmod=644 docker/temporal/docker_mpf.yaml /etc/temporal/config/docker_mpf.yaml
COPY --chmod=644 docker/temporal/dynamicconfig-auth.yaml /etc/temporal/config/dynamicconfig/mpf-auth.yaml
