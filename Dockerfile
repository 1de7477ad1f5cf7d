# syntax=docker/dockerfile:1

# Baton image: the SPA (when frontend/ exists) is built with Node, embedded into a static Go
# binary, which runs as a non-root user on distroless.
#   docker build -t baton .
#   docker run --rm -p 8080:8080 -e DATABASE_URL=... -e REDIS_URL=... baton serve

ARG GO_VERSION=1.26
ARG NODE_VERSION=20

# --- SPA ------------------------------------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS frontend
WORKDIR /src
# The SPA is optional until it lands, and COPY cannot name a directory that may not exist, so
# the whole (small, see .dockerignore) context comes in and the build runs only if there is a
# frontend/package.json. Without one, frontend/dist keeps whatever placeholder the repo holds.
COPY . .
RUN --mount=type=cache,target=/root/.npm \
    if [ -f frontend/package.json ]; then \
        cd frontend && npm ci --no-audit --no-fund && npm run build; \
    fi; \
    mkdir -p /src/frontend/dist

# --- Go binary ------------------------------------------------------------------------------
FROM golang:${GO_VERSION} AS build
WORKDIR /src
ENV CGO_ENABLED=0
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
COPY --from=frontend /src/frontend/dist ./frontend/dist
# The context holds no .git: give the version and commit as build arguments
# (docker build --build-arg VERSION=$(git describe --tags) --build-arg COMMIT=$(git rev-parse --short=12 HEAD) .).
ARG VERSION=
ARG COMMIT=
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    VERSION=$VERSION COMMIT=$COMMIT go build -trimpath -ldflags="-s -w $(scripts/ldflags.sh)" -o /out/baton ./cmd/baton

# --- runtime --------------------------------------------------------------------------------
# static-debian12 carries CA certificates and tzdata (cron time zones) and a nonroot user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/baton /baton
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/baton"]
CMD ["serve"]
