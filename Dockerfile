# One image for the worker, the gateway, the provider simulator, the events receiver and the
# identity provider (docker/idp.ts, node-oidc-provider as `mpf cluster up` runs it):
#   docker run IMAGE node bin/mpf.cjs worker | gateway --port 8080 | simulator --port 8090 --checkout-port 8091
# (docker-compose.yml runs them, and the one-shot secrets, certificate and API-key jobs).
# Build: npm ci + tsc (tsconfig.build.json -> dist/). dist/simulator/forwarder.js is what
# compose's worker runs in front of `mpf worker` while it talks to the simulator service.

FROM node:22-slim AS build
WORKDIR /app
ENV npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bin ./bin
RUN npm run build && npm prune --omit=dev
# The identity provider (docker/idp.ts -> tools/cluster/idp-server.ts) runs oidc-provider, which
# the library never loads, so it is a devDependency: put back here as a production package of this
# image only, at package.json's version and the lock's tree (--no-save: both stay as committed).
RUN npm install --no-save --save-prod --omit=dev "oidc-provider@$(node -p "require('./package.json').devDependencies['oidc-provider']")"
# docker-compose.yml's identity provider and admin-token job: `mpf cluster up`'s IdP code
# (tools/cluster/idp-server.ts, idp.ts and what they import), run through tsx as natively.
COPY tools/cluster/*.ts tools/cluster/versions.json ./tools/cluster/
COPY docker/*.ts ./docker/

FROM node:22-slim AS runtime
# The release's commit (the image has no .git): part of the workers' build id, their Worker
# Deployment Version. `docker compose build` passes it (MPF_COMMIT=$(git rev-parse --short HEAD));
# unset, set WORKER_BUILD_ID on the workers.
ARG MPF_COMMIT=
# MPF_USE_DIST=1: bin/mpf.cjs runs the compiled dist/ (no TypeScript compiled at start-up).
ENV NODE_ENV=production MPF_USE_DIST=1 MPF_COMMIT=${MPF_COMMIT}
WORKDIR /app
COPY --from=build --chown=root:root /app/package.json /app/package-lock.json ./
COPY --from=build --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --from=build --chown=root:root /app/bin ./bin
# The sources stay beside dist/ so stack traces and the workflow bundler can point at them.
COPY --from=build --chown=root:root /app/src ./src
COPY --from=build --chown=root:root /app/tsconfig.json /app/tsconfig.build.json ./
COPY --from=build --chown=root:root /app/tools ./tools
COPY --from=build --chown=root:root /app/docker ./docker
# openssl: docker-compose.yml's temporal-certs job makes the certificates of mTLS to Temporal with
# it, and its secrets job the secrets (openssl rand).
RUN apt-get update && apt-get install -y --no-install-recommends openssl && rm -rf /var/lib/apt/lists/*
# Unprivileged; the code is owned by root and read-only for this user.
# The simulator's state (SIMULATOR_STATE_FILE in compose): a directory the unprivileged user owns,
# so the named volume mounted on it is writable.
# So is compose's admin-token job's (/run/admin-token): a new named volume takes the owner of the
# directory it is mounted on.
RUN mkdir -p /var/lib/mpf-simulator /run/admin-token && chown node:node /var/lib/mpf-simulator /run/admin-token
USER node
# gateway 8080; simulator: provider API 8090, hosted checkout 8091; events receiver 8787; metrics 9464; IdP 9443
EXPOSE 8080 8090 8091 8787 9443 9464
# docker-compose.yml gives each service its command: node bin/mpf.cjs worker | gateway | simulator …
CMD ["node", "bin/mpf.cjs", "--help"]
