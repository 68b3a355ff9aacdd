# Pigeon: one image for API and worker processes (the command picks the role).
# Node 24 LTS. Its SQLite driver is better-sqlite3 13 (src/store/sqlite-driver.mjs), a prebuilt
# N-API binary; better-sqlite3 12, kept for Node 20, is still compiled by npm ci.
FROM node:24-bookworm-slim
WORKDIR /app
# better-sqlite3 12 compiles from source (npm ci installs it on every Node).
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# The client package is an npm workspace: npm ci needs its manifest (and runs its build script).
COPY packages/client/package.json packages/client/build.mjs packages/client/
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
# The bundle bin/pigeon runs (bin/bundle.mjs), built while node_modules is still writable.
RUN node bin/pigeon --version
USER node
ENV HOST=0.0.0.0 PORT=3000
EXPOSE 3000 2775
ENTRYPOINT ["./bin/pigeon"]
CMD ["serve"]
