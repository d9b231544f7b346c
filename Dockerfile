# One image for the worker, the gateway and the provider simulator:
#   docker run IMAGE node bin/mpf.cjs worker | gateway --port 8080 | simulator --port 8090
# (docker-compose.yml runs all three). Build: npm ci + tsc (tsconfig.build.json -> dist/).

FROM node:20-slim AS build
WORKDIR /app
ENV npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bin ./bin
RUN npm run build && npm prune --omit=dev

FROM node:20-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=root:root /app/package.json /app/package-lock.json ./
COPY --from=build --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --from=build --chown=root:root /app/bin ./bin
# The sources stay beside dist/ so stack traces and the workflow bundler can point at them.
COPY --from=build --chown=root:root /app/src ./src
COPY --from=build --chown=root:root /app/tsconfig.json /app/tsconfig.build.json ./
# Unprivileged; the code is owned by root and read-only for this user.
USER node
EXPOSE 8080 8090
# docker-compose.yml gives each service its command: node bin/mpf.cjs worker | gateway | simulator …
CMD ["node", "bin/mpf.cjs", "--help"]
