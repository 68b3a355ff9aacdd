/**
 * The composition root: read the configuration, open and migrate the store, and build the
 * context, HTTP app, carrier and workers that `pigeon serve`, `pigeon worker` and the CLI use.
 */
import pino, { type Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import type { Carrier } from './carriers/carrier.ts';
import { createCarrier } from './carriers/create-carrier.ts';
import { loadConfig, type Config } from './config/config.ts';
import { buildApp } from './http/app.ts';
import type { Context } from './services/context.ts';
import { installReviewMail } from './services/mail.ts';
import { openStore } from './store/connect.ts';
import { migrateToLatest } from './store/migrate.ts';
import { systemClock } from './util/ids.ts';
import { createWorkers, type Workers } from './workers/workers.ts';

/** Never log a key, password, secret or message body. */
const REDACT = ['req.headers.authorization', 'headers.authorization', '*.password', '*.key', '*.body', '*.message', '*.webhook_secret'];

export function createLogger(config: Config, destination: number = 1): Logger {
  return pino({ level: config.logLevel, redact: { paths: REDACT, censor: '[redacted]' } }, pino.destination({ dest: destination, sync: false }));
}

export async function openContext(config: Config, log: Logger): Promise<Context & { setWake(fn: Context['wake']): void }> {
  const store = openStore(config.databaseUrl);
  await migrateToLatest(store.db);
  // Sender ID decisions mail the owner from whichever process makes them (server or CLI).
  installReviewMail();
  let wake: Context['wake'] = () => {};
  return {
    store,
    config,
    clock: systemClock,
    log,
    wake: (queue) => wake(queue),
    setWake(fn) {
      wake = fn;
    },
  };
}

export interface Running {
  ctx: Context;
  app: FastifyInstance | null;
  carrier: Carrier;
  workers: Workers | null;
  stop(): Promise<void>;
}

/** Starts the API (unless `api` is false) and the workers (unless `workers` is false). */
export async function start(opts: { api: boolean; workers: boolean; env?: NodeJS.ProcessEnv }): Promise<Running> {
  const config = loadConfig(opts.env);
  const log = createLogger(config);
  const ctx = await openContext(config, log);
  ctx.store.startBackgroundCheckpoints?.();
  const carrier = createCarrier(config, ctx.clock, log);
  const workers = opts.workers ? createWorkers(ctx, carrier) : null;
  if (workers) ctx.setWake((queue) => workers.wake(queue));
  let app: FastifyInstance | null = null;
  // Without Redis, each API process keeps its own counters (docs/deployment.md).
  // Loaded only when configured, like the PostgreSQL driver and the mail transport: a process
  // keeps in memory only the clients it uses (ioredis alone is about 20 MiB).
  const rateLimits =
    opts.api && config.redisUrl ? new (await import('./http/redis-rate-limit-store.ts')).RedisRateLimitStore(config.redisUrl, log) : undefined;
  if (rateLimits && !(await rateLimits.ready())) log.warn('Redis is not reachable yet; rate limits are counted per process until it is');
  if (opts.api) {
    app = await buildApp({ ctx, carrier, logger: log, ...(rateLimits ? { rateLimits } : {}) });
    await app.listen({ port: config.port, host: config.host });
  }
  workers?.start();
  // Only a process with workers talks to the carrier: `serve --no-workers` never binds to an SMSC.
  if (workers) carrier.start?.();
  log.info({ api: opts.api ? `http://${config.host}:${config.port}` : null, workers: opts.workers, carrier: carrier.name, store: ctx.store.dialect }, 'pigeon started');
  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      // Stop taking requests, finish those in flight, let workers finish their batch, then close.
      await app?.close();
      await rateLimits?.close();
      await workers?.stop();
      await carrier.close();
      await ctx.store.close();
      log.info('pigeon stopped');
      log.flush();
    })());
  return { ctx, app, carrier, workers, stop };
}
