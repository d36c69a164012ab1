# syntax=docker/dockerfile:1

# ---- deps: full dependency tree (incl. dev) for building --------------------
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

# ---- build: compile TypeScript to dist/ -------------------------------------
FROM deps AS build
WORKDIR /app
COPY tsconfig.json tsconfig.build.json ./
COPY api ./api
COPY worker ./worker
COPY platform ./platform
COPY catalogue ./catalogue
COPY sync ./sync
COPY records ./records
COPY reads ./reads
COPY bulk ./bulk
COPY feed ./feed
COPY webhooks ./webhooks
COPY auth ./auth
COPY client ./client
COPY bin ./bin
COPY migrations ./migrations
RUN npm run build

# ---- prod-deps: runtime dependencies only -----------------------------------
FROM node:24-bookworm-slim AS prod-deps
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# ---- runtime ----------------------------------------------------------------
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000
WORKDIR /app
COPY --chown=node:node package.json package-lock.json ./
COPY --from=prod-deps --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
# The `commerce-sync` launcher (package.json "bin"): without source or tsx here, it runs dist/client/commerce-sync.js.
COPY --chown=node:node bin/commerce-sync.mjs ./bin/commerce-sync.mjs
# `npm run build` puts the SQL files (migrations/, sync/sql/, reads/sql/) beside the JavaScript in dist/.
# Every command runs from dist/ with plain node (no tsx, which is a dev dependency and not installed here):
#   node dist/bin/api.js | worker.js | migrate.js | start.js | cli.js <command> | reset.js --yes
#   node dist/client/commerce-sync.js <command>
USER node
EXPOSE 3000
# Only meaningful for the API process; compose disables it for worker/migrate.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/bin/api.js"]
