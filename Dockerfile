# Pigeon: one image for API and worker processes (the command picks the role).
# Node 22 LTS: on Node 24.19 and later, better-sqlite3 12 (the last line that supports Node 20)
# can abort the process when a statement is garbage-collected.
FROM node:22-bookworm-slim
WORKDIR /app
# better-sqlite3 compiles from source where no prebuilt binary fits.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# The client package is an npm workspace: npm ci needs its manifest (and runs its build script).
COPY packages/client/package.json packages/client/build.mjs packages/client/
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
USER node
ENV HOST=0.0.0.0 PORT=3000
EXPOSE 3000
ENTRYPOINT ["./bin/pigeon"]
CMD ["serve"]
