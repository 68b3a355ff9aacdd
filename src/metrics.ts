/**
 * Prometheus metrics of this process, served at `/metrics`. Counters count what this process did
 * (Prometheus sums them across processes); queue gauges are read from the database at scrape
 * time, so every process reports the same shared queues.
 */
import client from 'prom-client';
import type { Store } from './store/connect.ts';
import type { JobQueue } from './store/database.ts';
import { dispatchBacklogByAccount, queueDepth } from './store/repositories/jobs.repository.ts';
import { countSmppDeliveries } from './store/repositories/smpp-outbox.repository.ts';

export const registry = new client.Registry();
// prom-client's default names already start with process_ or nodejs_: the prefix is only pigeon_.
client.collectDefaultMetrics({ register: registry, prefix: 'pigeon_' });

export const httpRequests = new client.Counter({
  name: 'pigeon_http_requests_total',
  help: 'HTTP requests answered, by method, route pattern and status code.',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});

export const httpDuration = new client.Histogram({
  name: 'pigeon_http_request_duration_seconds',
  help: 'Time from request received to response sent, by method and route pattern.',
  labelNames: ['method', 'route'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
});

export const messageTransitions = new client.Counter({
  name: 'pigeon_messages_total',
  help: 'Messages that reached a status: scheduled or pending when accepted, pending when released, then sent, delivered, failed or canceled.',
  labelNames: ['status'] as const,
  registers: [registry],
});

export const scheduledReleaseLateness = new client.Histogram({
  name: 'pigeon_scheduled_release_lateness_seconds',
  help: 'For each scheduled message released, the time from its send_at to the commit of its release.',
  buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
  registers: [registry],
});

export const creditsDebited = new client.Counter({
  name: 'pigeon_credits_debited_total',
  help: 'Credits debited for accepted messages (refunds are not subtracted).',
  registers: [registry],
});

export const carrierSubmits = new client.Counter({
  name: 'pigeon_carrier_submits_total',
  help: 'Messages handed to the carrier, by outcome: accepted, rejected, or retry (throttled or link down).',
  labelNames: ['carrier', 'outcome'] as const,
  registers: [registry],
});

export const webhookAttempts = new client.Counter({
  name: 'pigeon_webhook_attempts_total',
  help: 'Webhook delivery attempts, by outcome (delivered, failed, refused).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const smppBinds = new client.Gauge({
  name: 'pigeon_smpp_binds',
  help: 'Binds held by customers on this process\'s SMPP listener, by bind type.',
  labelNames: ['bind_type'] as const,
  registers: [registry],
});

export const smppSubmits = new client.Counter({
  name: 'pigeon_smpp_submits_total',
  help: 'submit_sm answered by the SMPP listener, by command_status (0x00000000: accepted).',
  labelNames: ['status'] as const,
  registers: [registry],
});

const QUEUES: JobQueue[] = ['dispatch', 'receipt', 'webhook', 'mail'];

/**
 * The per-account backlog gauges show the accounts among the BACKLOG_TOP_ACCOUNTS with the most
 * waiting and the BACKLOG_TOP_ACCOUNTS whose oldest message has waited longest: at most twice as
 * many series, however many accounts there are, and a small account held up is not hidden.
 */
export const BACKLOG_TOP_ACCOUNTS = 10;

const SHOWN_ACCOUNTS = `the ${BACKLOG_TOP_ACCOUNTS} accounts with the most waiting and the ${BACKLOG_TOP_ACCOUNTS} whose oldest message has waited longest (at most ${2 * BACKLOG_TOP_ACCOUNTS} series)`;

/** Adds the queue gauges, read from `store` at each scrape. */
export function registerQueueGauges(store: Store, clock: () => number): void {
  for (const name of ['pigeon_queue_depth', 'pigeon_queue_oldest_age_seconds', 'pigeon_account_dispatch_backlog', 'pigeon_account_dispatch_oldest_age_seconds', 'pigeon_smpp_deliveries_waiting']) {
    if (registry.getSingleMetric(name)) registry.removeSingleMetric(name);
  }
  // Both gauges are collected at the same scrape from one read of the backlog.
  let read: { at: number; rows: Promise<{ accountId: string; depth: number; oldestCreatedAt: number }[]> } | null = null;
  const shown = () => {
    const now = clock();
    if (!read || now - read.at > 500) read = { at: now, rows: dispatchBacklogByAccount(store.db, now, BACKLOG_TOP_ACCOUNTS) };
    return read.rows;
  };
  new client.Gauge({
    name: 'pigeon_account_dispatch_backlog',
    help: `Messages waiting for dispatch, for ${SHOWN_ACCOUNTS}; each account may hold DISPATCH_BACKLOG_ACCOUNT_SHARE per cent of DISPATCH_BACKLOG_LIMIT.`,
    labelNames: ['account'] as const,
    registers: [registry],
    async collect() {
      const rows = await shown();
      this.reset();
      for (const b of rows) this.set({ account: b.accountId }, b.depth);
    },
  });
  new client.Gauge({
    name: 'pigeon_account_dispatch_oldest_age_seconds',
    help: `Age of the oldest message waiting for dispatch, for ${SHOWN_ACCOUNTS}.`,
    labelNames: ['account'] as const,
    registers: [registry],
    async collect() {
      const now = clock();
      const rows = await shown();
      this.reset();
      for (const b of rows) this.set({ account: b.accountId }, Math.max(0, (now - b.oldestCreatedAt) / 1000));
    },
  });
  new client.Gauge({
    name: 'pigeon_smpp_deliveries_waiting',
    help: 'Receipts and inbound messages waiting for an SMPP user\'s receiver bind, in every process.',
    registers: [registry],
    async collect() {
      this.set(await countSmppDeliveries(store.db, clock()));
    },
  });
  const age = new client.Gauge({
    name: 'pigeon_queue_oldest_age_seconds',
    help: 'Age of the oldest job waiting in each queue (0 when empty).',
    labelNames: ['queue'] as const,
    registers: [registry],
  });
  new client.Gauge({
    name: 'pigeon_queue_depth',
    help: 'Jobs waiting or in progress, by queue (dispatch, receipt, webhook, mail).',
    labelNames: ['queue'] as const,
    registers: [registry],
    async collect() {
      const now = clock();
      for (const queue of QUEUES) {
        const { depth, oldestCreatedAt } = await queueDepth(store.db, queue, now);
        this.set({ queue }, depth);
        age.set({ queue }, oldestCreatedAt === null ? 0 : Math.max(0, (now - oldestCreatedAt) / 1000));
      }
    },
  });
}
