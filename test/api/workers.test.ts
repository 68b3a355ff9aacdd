/**
 * The running workers of one process (not drained by hand): on PostgreSQL several loops share
 * each queue, on SQLite one; either way every message is submitted once.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';

describe('running workers', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(async () => {
    await h.workers.stop();
    await h.close();
  });

  test('a burst of 1,500 messages is dispatched, each submitted once', async () => {
    const { key } = await h.customer({ credits: 10_000 });
    const ids: string[] = [];
    for (let call = 0; call < 3; call++) {
      const messages = Array.from({ length: 500 }, (_, i) => ({ to: `+1415555${String(call * 500 + i).padStart(4, '0')}`, message: `Burst ${call}-${i}` }));
      const res = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages } });
      assert.equal(res.statusCode, 200, res.body);
      ids.push(...(res.json().messages as { message_id: string }[]).map((m) => m.message_id));
    }
    h.workers.start();
    const deadline = Date.now() + 30_000;
    for (;;) {
      const pending = await h.ctx.store.db.selectFrom('messages').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'pending').executeTakeFirstOrThrow();
      if (Number(pending.n) === 0) break;
      assert.ok(Date.now() < deadline, `${pending.n} messages still pending`);
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(ids.length, 1500);
    for (const id of ids) assert.equal(h.carrier.submitted.get(id), 1, `${id} submitted once`);
    assert.equal(h.carrier.submitted.size, 1500);
  });
});
