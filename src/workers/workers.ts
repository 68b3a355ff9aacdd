/**
 * The background workers of one process: dispatch (pending messages to the carrier) and receipts
 * (carrier reports applied to messages). The webhook and mail senders join here.
 */
import type { Carrier } from '../carriers/carrier.ts';
import { dispatchJobs } from '../services/dispatch-messages.ts';
import { applyReceiptJobs, recordDeliveryReport } from '../services/record-delivery-reports.ts';
import type { Context } from '../services/context.ts';
import { QueueWorker } from './queue-worker.ts';

export interface Workers {
  start(): void;
  wake(queue: string): void;
  /** Processes everything due now, queue by queue, until nothing is due (tests, CLI). */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

export function createWorkers(ctx: Context, carrier: Carrier): Workers {
  const common = { store: ctx.store, clock: ctx.clock, log: ctx.log };
  const queues: Record<string, QueueWorker> = {
    dispatch: new QueueWorker({
      ...common,
      queue: 'dispatch',
      batchSize: 500,
      leaseMs: 60_000,
      idleMs: 200,
      handle: async (jobs) => {
        await dispatchJobs(ctx, carrier, jobs);
      },
    }),
    receipt: new QueueWorker({
      ...common,
      queue: 'receipt',
      batchSize: 500,
      leaseMs: 60_000,
      idleMs: 100,
      handle: async (jobs) => {
        await applyReceiptJobs(ctx, jobs);
      },
    }),
  };
  carrier.onDeliveryReport((report) => recordDeliveryReport(ctx, report));
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
