/**
 * The background workers of one process: dispatch (pending messages to the carrier) and receipts
 * (carrier reports applied to messages). The webhook and mail senders join here.
 */
import type { Carrier } from '../carriers/carrier.ts';
import { dispatchJobs } from '../services/dispatch-messages.ts';
import { applyReceiptJobs, recordDeliveryReport } from '../services/record-delivery-reports.ts';
import { installReviewMail, sendMailJobs } from '../services/mail.ts';
import type { Context } from '../services/context.ts';
import { QueueWorker } from './queue-worker.ts';
import { ExpirySweeper } from './expiry-sweeper.ts';
import { WebhookWorker, type WebhookWorkerOptions } from './webhook-worker.ts';

export interface Workers {
  start(): void;
  wake(queue: string): void;
  /** Processes everything due now, queue by queue, until nothing is due (tests, CLI). */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

export function createWorkers(ctx: Context, carrier: Carrier, opts: { webhook?: WebhookWorkerOptions } = {}): Workers {
  const common = { store: ctx.store, clock: ctx.clock, log: ctx.log };
  const queues: Record<string, Pick<QueueWorker, 'start' | 'wake' | 'drain' | 'stop'>> = {
    dispatch: new QueueWorker({
      ...common,
      queue: 'dispatch',
      batchSize: 500,
      leaseMs: ctx.config.jobLeaseMs,
      idleMs: 200,
      handle: async (jobs) => {
        await dispatchJobs(ctx, carrier, jobs);
      },
    }),
    receipt: new QueueWorker({
      ...common,
      queue: 'receipt',
      batchSize: 500,
      leaseMs: ctx.config.jobLeaseMs,
      idleMs: 100,
      handle: async (jobs) => {
        await applyReceiptJobs(ctx, jobs);
      },
    }),
    webhook: new WebhookWorker(ctx, opts.webhook),
    // Mail is slow and rare: small batches, a long lease (an SMTP exchange can take a while).
    mail: new QueueWorker({ ...common, queue: 'mail', batchSize: 20, leaseMs: 120_000, idleMs: 1000, handle: (jobs) => sendMailJobs(ctx, jobs) }),
    // SMPP only: the simulator's `1111` recipients stay `sent` for ever (DECISIONS.md §6).
    ...(ctx.config.carrier === 'smpp' ? { expiry: new ExpirySweeper(ctx, ctx.config.smpp.validityHours * 3_600_000) } : {}),
  };
  carrier.onDeliveryReport((report) => recordDeliveryReport(ctx, report));
  // Review decisions made by the CLI or another process are mailed too.
  installReviewMail();
  return {
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
