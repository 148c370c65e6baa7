# syntax=docker/dockerfile:1
# The product's image: `openfief` (operator, egress proxy and CLI) on Node.js 20.
# Pin the base by digest in CI, for example
#   docker build --build-arg NODE_IMAGE=node:20-bookworm-slim@sha256:<digest> .
# so the image that was reviewed is the image that is built.
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# better-sqlite3 compiles SQLite from source when no prebuilt binary can be fetched.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
COPY sdk/package.json sdk/package.json
RUN npm ci --omit=dev --no-audit --no-fund
COPY bin bin
COPY src src
COPY sdk sdk
COPY migrations migrations
COPY catalog catalog
COPY data data
COPY deploy/crds deploy/crds
# Only what runs: no tests, no node-gyp build leftovers.
RUN find src -name '*.test.ts' -delete \
 && rm -rf node_modules/better-sqlite3/build/Release/obj node_modules/better-sqlite3/build/Release/.deps

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    TMPDIR=/tmp
WORKDIR /app
COPY --from=build --chown=0:0 /app /app
# A numeric user (distroless's nonroot): the kubelet refuses runAsNonRoot for a named user,
# since it cannot tell that a name is not root.
USER 65532:65532
ENTRYPOINT ["node", "/app/bin/openfief.js"]
CMD ["--help"]
