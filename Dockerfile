# modelswap: the bot and worker. Small, non-root; runs the compiled build (dist/), no TypeScript loader.
# build: every dependency (TypeScript is a dev dependency), then `npm run build` into dist/
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY commands ./commands
COPY jobs ./jobs
COPY scripts/copy-assets.mjs ./scripts/
RUN npm run build

# deps: only the runtime dependencies (no tsx, no TypeScript compiler, no test tools). npm ci here picks
# @resvg/resvg-js's binary for the image's platform (linux-x64-gnu on amd64, linux-arm64-gnu on arm64):
# build for the platform you run on, never copy a node_modules from another one.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends openssh-client ca-certificates \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json manifest.yml ./
COPY bin ./bin
ENV NODE_ENV=production
USER node
EXPOSE 3000
# docker stop sends SIGTERM: no new work, running steps reach a safe point (swaps.shutdownGraceSeconds).
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=5s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "bin/modelswap.js"]
CMD ["start"]
