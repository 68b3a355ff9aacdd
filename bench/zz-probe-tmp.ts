import Database from 'better-sqlite3';
const stats = new Map<string, [number, number]>();
const proto = (Database as any).prototype;
const origPrepare = proto.prepare;
proto.prepare = function (sql: string) {
  const st = origPrepare.call(this, sql);
  for (const m of ['all', 'run', 'get', 'iterate']) {
    const f = st[m].bind(st);
    st[m] = (...a: any[]) => { const t = performance.now(); try { return f(...a); } finally { const k = sql.slice(0, 90); const v = stats.get(k) ?? [0, 0]; v[0] += performance.now() - t; v[1]++; stats.set(k, v); } };
  }
  return st;
};
import pino from 'pino';
import { loadConfig } from '../src/config/config.ts';
import { openStore } from '../src/store/connect.ts';
import { migrateToLatest } from '../src/store/migrate.ts';
import { createAccount } from '../src/services/accounts.ts';
import { newId, systemClock } from '../src/util/ids.ts';
import { chunked } from '../src/store/chunk.ts';
import { makeTestCa, startReceiver } from '../test/api/webhooks-receiver.ts';
import { WebhookWorker } from '../src/workers/webhook-worker.ts';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';
import { rmSync } from 'node:fs';
rmSync('/tmp/whprobe.db', { force: true }); rmSync('/tmp/whprobe.db-wal', { force: true });
const ca = makeTestCa();
const r = await startReceiver(ca, () => ({ status: 200 }));
const store = openStore('sqlite:/tmp/whprobe.db'); await migrateToLatest(store.db);
const config = loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' });
const ctx = { store, config, clock: systemClock, log: pino({ level: 'info' }), wake: () => {} };
const acc = await createAccount(ctx as any, { name: 'b', email: 'b@x.com', credits: 0 });
const now = Date.now(); const N = 5000;
const ev: any[] = [], jb: any[] = [];
for (let i = 0; i < N; i++) { const id = newId('evt', now); ev.push({ id, account_id: acc.id, message_id: newId('msg', now), batch_id: null, event: 'sms.sent', url: r.url('/h'), payload: '{"a":1}', status: 'pending', attempts: 0, last_error: null, created_at: now, updated_at: now }); jb.push({ id: newId('job', now), queue: 'webhook', ref: id, payload: null, run_at: now, attempts: 0, created_at: now }); }
for (const p of chunked(ev, 12)) await store.db.insertInto('webhook_events').values(p).execute();
for (const p of chunked(jb, 7)) await store.db.insertInto('jobs').values(p).execute();
const w = new WebhookWorker(ctx as any, { dispatcher: new WebhookDispatcher({ timeoutMs: 5000, allowPrivate: true, ca: ca.ca }) });
const t0 = Date.now(); w.start();
for (;;) { await new Promise((res) => setTimeout(res, 500)); const n = (await store.db.selectFrom('webhook_events').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'delivered').executeTakeFirstOrThrow()).n; console.log(Date.now() - t0, n, r.received.length); if (Number(n) >= N || Date.now() - t0 > 15000) break; }
await w.stop(); await r.close(); await store.close(); ca.cleanup();

console.log([...stats].sort((a, b) => b[1][0] - a[1][0]).slice(0, 12).map(([k, v]) => v[0].toFixed(0) + 'ms x' + v[1] + ' ' + k).join('\n'));
