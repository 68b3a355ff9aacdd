/**
 * The background workers of one process, each on the one worker loop (worker-loop.ts): the
 * scheduler (due scheduled messages to dispatch), dispatch (pending messages to the carrier),
 * receipts (carrier reports applied to messages), the webhook and mail senders, and the sweepers
 * (idempotency keys, validity periods, SMPP's expiry, and incomplete inbound messages); inbound
 * messages from the carrier are stored through the handler registered here.
 */
import type { Carrier } from '../carriers/carrier.ts';
import { Dispatcher } from '../services/messages/dispatch-messages.ts';
import { applyReceiptJobs, claimAndApplyReceipts, recordDeliveryReport } from '../services/messages/record-delivery-reports.ts';
import { installReviewMail, sendMailJobs } from '../services/mail/mail.ts';
import type { Context } from '../services/context.ts';
import { QueueWorker } from './queue-worker.ts';
import { ExpirySweeper } from './expiry-sweeper.ts';
import { IdempotencySweeper } from './idempotency-sweeper.ts';
import { Scheduler, type SchedulerOptions } from './scheduler.ts';
import { ValiditySweeper } from './validity-sweeper.ts';
import { InboundPartsSweeper } from './inbound-parts-sweeper.ts';
import { BackupSweeper } from './backup-sweeper.ts';
import { ErasureSweeper, RetentionSweeper } from './retention-sweeper.ts';
import { receiveCarrierInbound } from '../services/inbound/inbound.ts';
import { WebhookWorker, type WebhookWorkerOptions } from './webhook-worker.ts';
import { WORKER_LINGER_MS } from './worker-loop.ts';
import { IntervalSweeper } from './interval-sweeper.ts';
import { VerifySweeper } from './verify-sweeper.ts';
import { ROUTE_SYNC_MS, RouteSync } from '../services/routes/routes.ts';

export interface Workers {
  /** Gives the carrier its routes from the database (filling an empty table from the configuration) before it binds. */
  loadRoutes(): Promise<void>;
  start(): void;
  wake(queue: string): void;
  /** Processes everything due now, queue by queue, until nothing is due (tests, CLI). */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

type Loop = Pick<QueueWorker, 'start' | 'wake' | 'drain' | 'stop'>;

/**
 * How often the loops of a queue after its first look for work when idle. The first polls at the
 * queue's idle interval and resumes the others as soon as it claims a full batch (a backlog);
 * work committed in this process wakes them all. Every loop polling at the queue's interval made
 * an idle `serve` on PostgreSQL some 55 claims a second, a tenth of a core and as much of the
 * database server's, taken from acceptance on a 2-core machine.
 */
export const SIBLING_IDLE_MS = 1000;

/** What `loops` gives each loop it makes: its idle interval and what it calls on a full batch. */
export interface LoopRole {
  idleMs(queueIdleMs: number): number;
  onFull: () => void;
}

/** Several loops on one queue, driven as one. */
export function loops(count: number, make: (role: LoopRole) => QueueWorker): Loop {
  const all: QueueWorker[] = [];
  const onFull = () => all.forEach((w) => w.resume());
  for (let i = 0; i < count; i++) all.push(make({ idleMs: (queueIdleMs) => (i === 0 ? queueIdleMs : Math.max(queueIdleMs, SIBLING_IDLE_MS)), onFull }));
  return {
    start: () => all.forEach((w) => w.start()),
    wake: () => all.forEach((w) => w.wake()),
    drain: async () => {
      let n = 0;
      for (const w of all) n += await w.drain();
      return n;
    },
    stop: async () => {
      await Promise.all(all.map((w) => w.stop()));
    },
  };
}

export function createWorkers(ctx: Context, carrier: Carrier, opts: { webhook?: WebhookWorkerOptions; scheduler?: SchedulerOptions } = {}): Workers {
  const common = { store: ctx.store, clock: ctx.clock, log: ctx.log };
  // A batch's status changes are one UPDATE each: on PostgreSQL a round trip each, so a loop
  // spends much of its time waiting and several loops (claiming disjoint jobs with SKIP LOCKED)
  // keep the database busier. They share one batch's worth of claims, so a process that dies
  // still leaves at most 500 messages to be submitted again. SQLite has one writer: one loop.
  const perQueue = ctx.store.dialect === 'postgres' ? 3 : 1;
  const batchSize = Math.floor(500 / perQueue);
  const queues: Record<string, Loop> = {
    // First: a drain releases what is due before dispatching.
    schedule: new Scheduler(ctx, opts.scheduler),
    // Each loop keeps the outcomes of its own batch when the database cannot take them, and
    // records them before it claims again (dispatch-messages.ts).
    dispatch: loops(perQueue, (role) => {
      const dispatcher = new Dispatcher(ctx, carrier, ctx.config.jobLeaseMs);
      return new QueueWorker({
        ...common,
        queue: 'dispatch',
        batchSize,
        leaseMs: ctx.config.jobLeaseMs,
        idleMs: role.idleMs(200),
        onFull: role.onFull,
        lingerMs: WORKER_LINGER_MS,
        beforeClaim: () => dispatcher.settle(),
        handle: async (jobs, claimedAt) => {
          await dispatcher.dispatch(jobs, claimedAt);
        },
      });
    }),
    receipt: loops(
      perQueue,
      (role) =>
        new QueueWorker({
          ...common,
          queue: 'receipt',
          batchSize,
          leaseMs: ctx.config.jobLeaseMs,
          idleMs: role.idleMs(100),
          onFull: role.onFull,
          lingerMs: WORKER_LINGER_MS,
          handle: async (jobs) => {
            await applyReceiptJobs(ctx, jobs);
          },
          // On PostgreSQL a receipt batch is claimed under lock in the transaction that applies it.
          ...(ctx.store.dialect === 'postgres' ? { claimAndHandle: (limit: number) => claimAndApplyReceipts(ctx, limit) } : {}),
        }),
    ),
    webhook: new WebhookWorker(ctx, opts.webhook),
    // Mail is slow and rare: small batches, a long lease (an SMTP exchange can take a while).
    mail: new QueueWorker({ ...common, queue: 'mail', batchSize: 20, leaseMs: 120_000, idleMs: 1000, handle: (jobs) => sendMailJobs(ctx, jobs) }),
    idempotency: new IdempotencySweeper(ctx),
    retention: new RetentionSweeper(ctx),
    erasure: new ErasureSweeper(ctx),
    // Messages with their own validity_period, on every carrier.
    validity: new ValiditySweeper(ctx),
    // Verifications past their lifetime (DECISIONS.md §14).
    verify: new VerifySweeper(ctx),
    // SMPP only: the simulator's `1111` recipients stay `sent` for ever (DECISIONS.md §6).
    ...(ctx.config.carrier === 'smpp' ? { expiry: new ExpirySweeper(ctx, ctx.config.smpp.validityHours * 3_600_000) } : {}),
    // Multi-part inbound messages come over SMPP only.
    ...(carrier.onInbound ? { inboundParts: new InboundPartsSweeper(ctx) } : {}),
    // BACKUP_DIR with BACKUP_INTERVAL_HOURS, on SQLite only (the configuration refuses it otherwise).
    ...(ctx.config.backup ? { backup: new BackupSweeper(ctx) } : {}),
  };
  // SMPP: routes changed by the CLI, the console or another process reach the carrier within a second.
  const routeSync = carrier.setRoutes ? new RouteSync(ctx, carrier) : null;
  if (routeSync) {
    const sweeper = new IntervalSweeper(ctx, {
      name: 'routes',
      intervalMs: ROUTE_SYNC_MS,
      atStart: true,
      failureMessage: 'routes could not be read',
      sweep: async () => {
        await routeSync.sync();
        return 0;
      },
    });
    queues.routes = {
      start: () => sweeper.start(),
      wake: () => {},
      drain: () => sweeper.drain(),
      stop: async () => {
        await sweeper.stop();
        await routeSync.forget().catch(() => {});
      },
    };
  }
  carrier.onDeliveryReport((report) => recordDeliveryReport(ctx, report));
  carrier.onInbound?.(async (message) => {
    await receiveCarrierInbound(ctx, message);
  });
  // Review decisions made by the CLI or another process are mailed too.
  installReviewMail();
  return {
    loadRoutes: async () => {
      await routeSync?.load();
    },
    start: () => Object.values(queues).forEach((q) => q.start()),
    wake: (queue) => queues[queue]?.wake(),
    drain: async () => {
      for (;;) {
        let n = 0;
        for (const q of Object.values(queues)) n += await q.drain();
        if (n === 0) return;
      }
    },
    stop: async () => {
      await Promise.all(Object.values(queues).map((q) => q.stop()));
    },
  };
}
