/**
 * A Pigeon test instance (test/helpers/harness.ts) whose workers use the SMPP connector against
 * TestSmsc instead of the simulator.
 */
import pino from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import { SmppCarrier } from '../../src/carriers/smpp/smpp-carrier.ts';
import type { MessagesTable } from '../../src/store/database.ts';
import { createWorkers, type Workers } from '../../src/workers/workers.ts';
import { harness, type Harness } from '../helpers/harness.ts';

export interface SmppPigeon {
  h: Harness;
  carrier: SmppCarrier;
  workers: Workers;
  send(key: string, to: string, message: string): Promise<string>;
  message(id: string): Promise<MessagesTable>;
  /** Drains the workers until `done` holds (polling: SMPP answers arrive on sockets). */
  settle(done: () => Promise<boolean> | boolean, what?: string): Promise<void>;
  close(): Promise<void>;
}

export async function smppPigeon(env: Record<string, string>): Promise<SmppPigeon> {
  const h = await harness({
    CARRIER: 'smpp',
    SMPP_SYSTEM_ID: 'pigeon',
    SMPP_PASSWORD: 'secret',
    SMPP_RECONNECT_MIN_MS: '20',
    SMPP_RECONNECT_MAX_MS: '200',
    // Events are written for the callback URL; its deliveries fail fast (nothing listens there).
    WEBHOOK_ALLOW_PRIVATE: 'true',
    ...env,
  });
  const carrier = new SmppCarrier(h.config.smpp, pino({ level: 'silent' }), h.clock.now);
  const workers = createWorkers(h.ctx, carrier);
  carrier.start();
  await carrier.whenBound();
  return {
    h,
    carrier,
    workers,
    async send(key, to, message) {
      const res = await h.request('POST', '/v1/sms/send', { key, body: { to, from: 'Acme', message, callback_url: 'https://127.0.0.1:9/sms' } });
      if (res.statusCode !== 200) throw new Error(`send failed: ${res.statusCode} ${res.body}`);
      return res.json().message_id as string;
    },
    async message(id) {
      return h.ctx.store.db.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    },
    async settle(done, what = 'condition') {
      // A deadline for a stuck test, not a measure of speed: a loaded machine may take seconds.
      const until = Date.now() + 20_000;
      for (;;) {
        await workers.drain();
        if (await done()) return;
        if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
        await sleep(5);
      }
    },
    async close() {
      await carrier.close();
      await h.close();
    },
  };
}
