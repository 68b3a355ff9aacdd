/**
 * The composition root: read the configuration, open and migrate the store, and build the
 * context, HTTP app, carrier and workers that `pigeon serve`, `pigeon worker` and the CLI use.
 */
import { readFileSync } from 'node:fs';
import { isatty } from 'node:tty';
import type { AddressInfo } from 'node:net';
import pino, { type Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import type { Carrier } from './carriers/carrier.ts';
import { loadConfig, type Config } from './config/config.ts';
import { checkDatabaseLocation } from './config/startup-checks.ts';
import type { Context } from './services/context.ts';
import { logStoreCondition } from './services/availability.ts';
import { installReviewMail } from './services/mail/mail.ts';
import { openStore } from './store/connect.ts';
import { migrateToLatest } from './store/migrate.ts';
import { systemClock } from './util/ids.ts';
import type { Workers } from './workers/workers.ts';
import type { SmppServer } from './smpp-server/smpp-server.ts';
import { answerSupervisor, type DeliveryProcess } from './delivery-process.ts';
import { registry } from './metrics.ts';

export { isDeliveryChild } from './delivery-process.ts';

/** Never log a key, password, secret or message body. */
const REDACT = ['req.headers.authorization', 'headers.authorization', '*.password', '*.key', '*.body', '*.message', '*.webhook_secret', '*.twilio_token', '*.auth_token'];

/**
 * JSON lines for log collectors; on a terminal (or with LOG_FORMAT=pretty) one readable line per
 * entry through pino-pretty, which formats on a worker thread of its own.
 */
export function createLogger(config: Config, destination: number = 1): Logger {
  const options = { level: config.logLevel, redact: { paths: REDACT, censor: '[redacted]' } };
  const pretty = config.logFormat === 'pretty' || (config.logFormat === 'auto' && isatty(destination));
  if (pretty) {
    return pino(
      options,
      pino.transport({
        target: 'pino-pretty',
        options: {
          destination,
          colorize: isatty(destination),
          singleLine: true,
          translateTime: 'SYS:HH:MM:ss.l',
          // The start banner and the request lines read as sentences; their fields are in the text.
          messageFormat:
            '{msg}{if dashboard}: API {api}, docs {docs}, dashboard {dashboard}, public URL {public_url}{end}{if smpp}, SMPP {smpp}{end}{if smpp_tls}, SMPP over TLS {smpp_tls}{end}{if req}: {req.method} {req.url} {res.statusCode} {responseTime} ms{end}{if req.accountId} {req.accountId}{end}',
          ignore: 'pid,hostname,api,docs,dashboard,public_url,smpp,smpp_tls,req,res,responseTime',
        },
      }),
    );
  }
  return pino(options, pino.destination({ dest: destination, sync: false }));
}

/** The start banner's addresses: where a person on this machine reaches the API, docs and dashboard. */
export function addresses(config: Config, port: number): { api: string; docs: string; dashboard: string; public_url: string } {
  const host = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host.includes(':') ? `[${config.host}]` : config.host;
  const base = `http://${host}:${port}`;
  return { api: `${base}/v1`, docs: `${base}/docs`, dashboard: `${base}/dashboard`, public_url: config.publicUrl };
}

/**
 * Opens the store and builds the context. With `migrate` (the default) the migrations the database
 * lacks are applied first; `pigeon migrate` opens without, to apply them itself and say which.
 */
export async function openContext(
  config: Config,
  log: Logger,
  opts: { migrate?: boolean } = {},
): Promise<Context & { setWake(fn: Context['wake']): void }> {
  const store = openStore(config.databaseUrl, { synchronous: config.sqliteSynchronous });
  if (opts.migrate !== false) await migrateToLatest(store.db);
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
  /** The SMPP listener customers bind to, when SMPP_SERVER_PORT is not 0 and the API runs. */
  smppServer: SmppServer | null;
  /** The child process that runs the workers, with `workers: 'process'` (the default `serve`). */
  delivery: DeliveryProcess | null;
  stop(): Promise<void>;
}

/** How long `serve` waits for its delivery process before it announces itself anyway. */
const DELIVERY_START_WAIT_MS = 20_000;

/**
 * Starts the API (unless `api` is false) and the workers: in this process (`true`), in a child
 * process it supervises (`'process'`, src/delivery-process.ts), or not at all (`false`). Only the
 * API server may create a missing SQLite database: a worker pointed at a missing file is a
 * mistake. `deliveryChild` marks the child itself, whose start is announced to its parent.
 */
export async function start(opts: {
  api: boolean;
  workers: boolean | 'process';
  env?: NodeJS.ProcessEnv;
  config?: Config;
  deliveryChild?: boolean;
}): Promise<Running> {
  const config = opts.config ?? loadConfig(opts.env);
  checkDatabaseLocation(config.databaseUrl, opts.api);
  const log = createLogger(config);
  const ctx = await openContext(config, log);
  logStoreCondition(ctx.store, log);
  ctx.store.startBackgroundCheckpoints?.();
  // The server's parts are loaded here, not with this module: every CLI command opens a context
  // through it, and none but serve and worker needs Fastify, the workers or a carrier.
  const [{ createCarrier }, { createWorkers }, { buildApp }] = await Promise.all([
    import('./carriers/create-carrier.ts'),
    import('./workers/workers.ts'),
    opts.api ? import('./http/app.ts') : Promise.resolve({ buildApp: null }),
  ]);
  const carrier = createCarrier(config, ctx.clock, log);
  const workers = opts.workers === true ? createWorkers(ctx, carrier) : null;
  if (workers) ctx.setWake((queue) => workers.wake(queue));
  // The child starts once the listeners are open (a start-up error leaves no child behind); what
  // the API commits before then waits in the queues, and the child's first wake-up takes it.
  let delivery: DeliveryProcess | null = null;
  const deliveryStatus = {
    status: () => delivery?.status() ?? { workers: { ready: false, detail: 'starting' }, carrier: { ready: false, detail: 'delivery process starting' } },
    metrics: () => delivery?.metrics() ?? Promise.resolve(null),
  };
  if (opts.workers === 'process') ctx.setWake((queue) => delivery?.wake(queue));
  let app: FastifyInstance | null = null;
  // Without Redis, each API process keeps its own counters (docs/deployment.md).
  // Loaded only when configured, like the PostgreSQL driver and the mail transport: a process
  // keeps in memory only the clients it uses (ioredis alone is about 20 MiB).
  const rateLimits =
    opts.api && config.redisUrl ? new (await import('./services/rate-limit/redis-rate-limit-store.ts')).RedisRateLimitStore(config.redisUrl, log) : undefined;
  if (rateLimits && !(await rateLimits.ready())) log.warn('Redis is not reachable yet; rate limits are counted per process until it is');
  // One set of counters for the process's HTTP API and SMPP listener: a customer's requests count
  // together, whichever way they come.
  const accountLimits = rateLimits ?? (opts.api ? new (await import('./services/rate-limit/rate-limit.ts')).MemoryRateLimitStore() : undefined);
  if (opts.api && buildApp) {
    app = await buildApp({ ctx, carrier, logger: log, ...(accountLimits ? { rateLimits: accountLimits } : {}), ...(opts.workers === 'process' ? { delivery: deliveryStatus } : {}) });
    await app.listen({ port: config.port, host: config.host });
  }
  // Beside the API: a process that answers customers' HTTP answers their binds too.
  let smppServer: SmppServer | null = null;
  if (opts.api && config.smppServer.port !== 0) {
    const { tls, ...timings } = config.smppServer;
    const { SmppServer, DEFAULT_SMPP_SERVER_OPTIONS } = await import('./smpp-server/smpp-server.ts');
    smppServer = new SmppServer(ctx, {
      ...DEFAULT_SMPP_SERVER_OPTIONS,
      ...timings,
      host: config.host,
      ...(accountLimits ? { rateLimits: accountLimits } : {}),
      ...(tls ? { tls: { port: tls.port, cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) } } : {}),
    });
    await smppServer.listen();
  }
  // SMPP_ROUTES & co. fill an empty routes table, whichever process starts first; a process with
  // workers binds to the table's routes, not the configuration's.
  if (config.carrier === 'smpp') {
    const { seedRoutes } = await import('./services/routes/routes.ts');
    await seedRoutes(ctx, config.smpp.routes);
  }
  await workers?.loadRoutes();
  workers?.start();
  if (opts.workers === 'process') {
    delivery = (await import('./delivery-process.ts')).superviseDeliveryProcess({ log, env: opts.env ?? process.env });
  }
  // Only a process with workers talks to the carrier: `serve --no-workers` never binds to an SMSC.
  if (workers) carrier.start?.();
  if (delivery && !(await delivery.started(DELIVERY_START_WAIT_MS))) {
    log.warn('the delivery process has not started yet; messages wait in their queues until it has (GET /ready says why)');
  }
  // The start banner: "pigeon started" with the addresses (test helpers wait for that message).
  const where = app ? addresses(config, (app.server.address() as AddressInfo).port) : { api: null };
  const hostPart = config.host.includes(':') ? `[${config.host}]` : config.host;
  const smpp = smppServer ? `${hostPart}:${smppServer.port}` : null;
  const smppTls = smppServer?.tlsPort ? `${hostPart}:${smppServer.tlsPort}` : null;
  if (opts.deliveryChild && workers) {
    answerSupervisor({
      wake: (queue) => workers.wake(queue),
      carrierStatus: () => carrier.status(),
      metrics: () => registry.getMetricsAsJSON(),
      // The parent is gone, however it ended: stop as on SIGTERM (src/cli/commands/service.ts).
      stop: () => process.kill(process.pid, 'SIGTERM'),
    });
  }
  // The delivery process's start is its parent's to announce.
  if (!opts.deliveryChild) {
    log.info({ ...where, smpp, ...(smppTls ? { smpp_tls: smppTls } : {}), workers: opts.workers, carrier: carrier.name, store: ctx.store.dialect }, 'pigeon started');
  }
  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      // Stop taking requests, finish those in flight, let workers finish their batch, then close.
      await Promise.all([app?.close(), smppServer?.close()]);
      await rateLimits?.close();
      await delivery?.stop();
      await workers?.stop();
      await carrier.close();
      await ctx.store.close();
      log.info('pigeon stopped');
      log.flush();
    })());
  return { ctx, app, carrier, workers, smppServer, delivery, stop };
}
