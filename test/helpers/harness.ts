/**
 * A Pigeon instance for tests: a throwaway store (SQLite in memory by default, PostgreSQL when
 * TEST_DATABASE_URL names one), a clock the test moves, the simulator, the workers (drained on
 * demand instead of polling) and the Fastify app to inject requests into.
 */
import pino from 'pino';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { loadConfig, type Config } from '../../src/config/config.ts';
import { buildApp } from '../../src/http/app.ts';
import { SimulatorCarrier } from '../../src/carriers/simulator/simulator-carrier.ts';
import type { Context } from '../../src/services/context.ts';
import { createWorkers, type Workers } from '../../src/workers/workers.ts';
import { createCustomer } from './customers.ts';
import { openTestStore } from './test-store.ts';
import './hash-cost.ts';

export class TestClock {
  constructor(public ms = Date.parse('2026-03-01T12:00:00.000Z')) {}
  now = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}

export interface Harness {
  ctx: Context;
  config: Config;
  clock: TestClock;
  app: FastifyInstance;
  carrier: SimulatorCarrier;
  workers: Workers;
  /** An account with credits, an all-scopes key and an approved Sender ID `Acme`. */
  customer(opts?: { credits?: number; scopes?: string; sender?: string | null; name?: string }): Promise<{ accountId: string; key: string; keyId: string }>;
  request(method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH', url: string, opts?: { key?: string; body?: unknown; headers?: Record<string, string> }): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export async function harness(env: Record<string, string> = {}): Promise<Harness> {
  const store = await openTestStore();
  const config = loadConfig({ SIM_DELIVERY_DELAY_MS: '1000', RATE_LIMIT_MAX: '100000', AUTH_FAILURE_LIMIT: '100000', SIGNUP_MAX_PER_HOUR: '100000', PUBLIC_URL: 'https://pigeon.test', ...env, DATABASE_URL: 'sqlite::memory:' });
  const clock = new TestClock();
  const ctx: Context = { store, config, clock: clock.now, log: pino({ level: 'silent' }), wake: () => {} };
  const carrier = new SimulatorCarrier(config.simulator.deliveryDelayMs, clock.now, true);
  const workers = createWorkers(ctx, carrier);
  const app = await buildApp({ ctx, carrier });
  let customers = 0;
  return {
    ctx,
    config,
    clock,
    app,
    carrier,
    workers,
    async customer(opts = {}) {
      customers++;
      return createCustomer(ctx, { name: opts.name ?? `Customer ${customers}`, email: `owner${customers}@example.com`, credits: opts.credits ?? 100, scopes: opts.scopes, sender: opts.sender });
    },
    request(method, url, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      if (opts.key !== undefined) headers.authorization = `Bearer ${opts.key}`;
      return app.inject({ method, url, headers, ...(opts.body === undefined ? {} : { payload: opts.body as object }) });
    },
    async close() {
      await app.close();
      await store.close();
    },
  };
}
