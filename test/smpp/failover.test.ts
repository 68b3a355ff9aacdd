/**
 * Routes from the database with priority and failover, over two SMSCs on 127.0.0.1: the route of
 * higher priority first; one refusing with 0x45 or dropped mid-run sends every message to the
 * other, none submitted twice; the route that took each message and its carrier cost stored, shown
 * to the operator and never to the customer; routes added and removed while running; the margin
 * against the ledger.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addRoute, listRoutes, removeRoute, updateRoute } from '../../src/services/routes/routes.ts';
import { marginReport, operatorMessage } from '../../src/services/routes/margin.ts';
import { messageDetail } from '../../src/services/messages/reports.ts';
import { smppPigeon, type SmppPigeon } from './pigeon-smpp.ts';
import { TestSmsc, type ReceivedSubmit } from './smsc.ts';

describe('SMPP routes: priority, failover, the route of each message, the margin', () => {
  let primary: TestSmsc;
  let backup: TestSmsc;
  let p: SmppPigeon;
  let key: string;
  let accountId: string;
  const ids: string[] = [];

  const send = async (to: string, text: string) => {
    const id = await p.send(key, to, text);
    ids.push(id);
    return id;
  };
  const allDelivered = (list: string[]) => async () => {
    for (const id of list) if ((await p.message(id)).status !== 'delivered') return false;
    return true;
  };
  /** How many times each text was acknowledged, over both SMSCs. */
  const acknowledgedTimes = () => {
    const count = new Map<string, number>();
    for (const s of [...primary.acknowledged, ...backup.acknowledged]) count.set(s.text, (count.get(s.text) ?? 0) + 1);
    return count;
  };
  const texts = (submits: ReceivedSubmit[]) => submits.map((s) => s.text);

  before(async () => {
    primary = new TestSmsc({ systemId: 'pigeon', password: 'secret' });
    backup = new TestSmsc({ systemId: 'backup', password: 'bk-pass' }, 'decimal');
    primary.autoReceipt = { stat: 'DELIVRD' };
    backup.autoReceipt = { stat: 'DELIVRD' };
    const [primaryPort, backupPort] = [await primary.listen(), await backup.listen()];
    p = await smppPigeon({
      SMPP_RESPONSE_TIMEOUT_MS: '1000',
      SMPP_ROUTES: JSON.stringify([
        { name: 'primary', prefixes: ['+44'], host: '127.0.0.1', port: primaryPort, priority: 10, cost_per_segment: 3 },
        { name: 'backup', prefixes: ['+44'], host: '127.0.0.1', port: backupPort, system_id: 'backup', password: 'bk-pass', priority: 1, cost_per_segment: 2 },
      ]),
    });
    const customer = await p.h.customer({ credits: 10_000 });
    key = customer.key;
    accountId = customer.accountId;
    // The first run of the route follower fills the table from SMPP_ROUTES and reports the links.
    await p.workers.drain();
  });
  after(async () => {
    await p.close();
    await primary.stop();
    await backup.stop();
  });

  test('SMPP_ROUTES filled the table; the list says both are bound and never gives a password', async () => {
    const routes = await listRoutes(p.h.ctx);
    assert.deepEqual(
      routes.map((r) => [r.name, r.prefixes, r.priority, r.cost_per_segment, r.failover_codes, r.bound]),
      [
        ['backup', ['+44'], 1, 2, ['0x08', '0x14', '0x45', '0x58'], true],
        ['primary', ['+44'], 10, 3, ['0x08', '0x14', '0x45', '0x58'], true],
      ],
    );
    const text = JSON.stringify(routes);
    assert.ok(!text.includes('secret') && !text.includes('bk-pass') && !text.includes('password'), text);
  });

  test('the route of higher priority takes the message; it is stored and shown to the operator, never to the customer', async () => {
    const id = await send('+447700900001', 'first by priority');
    await p.settle(allDelivered([id]), 'delivered');
    assert.deepEqual(texts(primary.acknowledged), ['first by priority']);
    assert.deepEqual(backup.submits, []);
    const m = await operatorMessage(p.h.ctx, id);
    assert.equal(m.route, 'primary');
    assert.equal(m.route_cost, 3 * m.segments);
    assert.deepEqual(m.routes_tried_list, []);
    const answer = await p.h.request('GET', `/v1/sms/delivery-reports?message_id=${id}`, { key });
    assert.equal(answer.statusCode, 200, answer.body);
    assert.ok(answer.body.includes(id) && !/primary|route/.test(answer.body), answer.body);
    // The owner's dashboard reads the message through messageDetail: no route there either.
    const detail = await messageDetail(p.h.ctx, accountId, id);
    assert.ok(!('route' in detail.message) && !('route_cost' in detail.message) && !('routes_tried' in detail.message));
    const events = await p.h.ctx.store.db.selectFrom('webhook_events').select('payload').where('message_id', '=', id).execute();
    assert.ok(events.length > 0);
    for (const e of events) assert.ok(!/primary|route/.test(e.payload), e.payload);
  });

  test('a route refusing with 0x45: every message goes over the other, each route tried once', async () => {
    const before = primary.submits.length;
    primary.answerNext(12, 0x45);
    const batch: string[] = [];
    for (let i = 0; i < 12; i++) batch.push(await send(`+4477009001${String(i).padStart(2, '0')}`, `refused ${i}`));
    await p.settle(allDelivered(batch), 'every refused message delivered over the backup');
    const refused = primary.submits.slice(before);
    assert.equal(refused.length, 12);
    assert.ok(refused.every((s) => s.messageId === null));
    assert.equal(new Set(texts(refused)).size, 12, 'the refusing route got each message once');
    assert.deepEqual(texts(backup.acknowledged).sort(), batch.map((_, i) => `refused ${i}`).sort());
    for (const id of batch) {
      const m = await operatorMessage(p.h.ctx, id);
      assert.equal(m.route, 'backup');
      assert.deepEqual(m.routes_tried_list, ['primary']);
      assert.equal(m.route_cost, 2 * m.segments);
    }
  });

  test('a route dropped mid-run: what it did not acknowledge goes over the other; none acknowledged twice', async () => {
    const before = new Set(texts(primary.acknowledged));
    primary.dropAfter(5);
    primary.refuseBinds = true;
    const batch: string[] = [];
    for (let i = 0; i < 30; i++) batch.push(await send(`+4477009002${String(i).padStart(2, '0')}`, `dropped ${i}`));
    await p.settle(allDelivered(batch), 'every message delivered');
    const viaPrimary = texts(primary.acknowledged).filter((t) => !before.has(t));
    assert.equal(viaPrimary.length, 5, 'the primary acknowledged five, then dropped');
    for (const [text, times] of acknowledgedTimes()) assert.equal(times, 1, `${text} acknowledged ${times} times`);
    const backupTexts = new Set(texts(backup.submits));
    for (const t of viaPrimary) assert.ok(!backupTexts.has(t), `${t} went to both routes`);
    for (const [i, id] of batch.entries()) {
      const m = await operatorMessage(p.h.ctx, id);
      assert.equal(m.route, viaPrimary.includes(`dropped ${i}`) ? 'primary' : 'backup', `dropped ${i}`);
    }
    primary.refuseBinds = false;
    await p.settle(async () => (await listRoutes(p.h.ctx)).every((r) => r.bound), 'the primary bound again');
  });

  test('a route that does not answer in time: the message goes over the other and never back to it', async () => {
    const before = primary.submits.length;
    primary.holdResponses = true;
    const id = await send('+447700900250', 'unanswered');
    await p.settle(allDelivered([id]), 'delivered over the backup after the primary timed out');
    // The held answer is never sent: the link it was for is gone.
    primary.holdResponses = false;
    assert.deepEqual(texts(primary.submits.slice(before)), ['unanswered']);
    assert.deepEqual(texts(backup.acknowledged).filter((t) => t === 'unanswered'), ['unanswered']);
    const m = await operatorMessage(p.h.ctx, id);
    assert.equal(m.route, 'backup');
    assert.deepEqual(m.routes_tried_list, ['primary']);
    await p.settle(async () => (await listRoutes(p.h.ctx)).every((r) => r.bound), 'the primary bound again');
    const next = await send('+447700900251', 'after the timeout');
    await p.settle(allDelivered([next]), 'delivered');
    assert.equal((await operatorMessage(p.h.ctx, next)).route, 'primary');
    assert.equal(primary.submits.filter((s) => s.text === 'unanswered').length, 1, 'never submitted to the primary again');
  });

  test('a route removed unbinds and its traffic goes to the rest; added back, it binds and takes the traffic again', async () => {
    await removeRoute(p.h.ctx, 'primary');
    await p.settle(() => primary.connections === 0, 'the primary unbound');
    assert.deepEqual((await listRoutes(p.h.ctx)).map((r) => r.name), ['backup']);
    const id = await send('+447700900300', 'after removal');
    await p.settle(allDelivered([id]), 'delivered');
    assert.equal((await operatorMessage(p.h.ctx, id)).route, 'backup');

    await addRoute(p.h.ctx, 'primary', { prefixes: '+44', host: '127.0.0.1', port: primary.port, systemId: 'pigeon', password: 'secret', priority: 10, costPerSegment: 3 });
    const binds = primary.binds;
    await p.settle(async () => primary.binds > binds && (await listRoutes(p.h.ctx)).every((r) => r.bound), 'the primary bound again');
    const again = await send('+447700900301', 'after adding back');
    await p.settle(allDelivered([again]), 'delivered');
    assert.equal((await operatorMessage(p.h.ctx, again)).route, 'primary');
  });

  test('a route of lower priority raised above the other takes the traffic, without binding again', async () => {
    const binds = backup.binds;
    await updateRoute(p.h.ctx, 'backup', { priority: '20' });
    await p.workers.drain();
    const id = await send('+447700900400', 'backup raised');
    await p.settle(allDelivered([id]), 'delivered');
    assert.equal((await operatorMessage(p.h.ctx, id)).route, 'backup');
    assert.equal(backup.binds, binds);
    await updateRoute(p.h.ctx, 'backup', { priority: '1' });
    await p.workers.drain();
  });

  test('the margin per day and route matches the ledger; a later cost change does not rewrite it', async () => {
    const day = new Date(p.h.clock.now()).toISOString().slice(0, 10);
    const report = await marginReport(p.h.ctx, day, day);
    const routed = await p.h.ctx.store.db.selectFrom('messages').select(['id', 'segments', 'route', 'route_cost']).where('route', 'is not', null).execute();
    assert.equal(routed.length, ids.length, 'every message of this file was taken by a route');
    const ledger = await p.h.ctx.store.db
      .selectFrom('credit_ledger')
      .select(['amount', 'kind'])
      .where('account_id', '=', accountId)
      .where('reference', 'in', routed.map((m) => m.id))
      .where('kind', 'in', ['debit', 'refund'])
      .execute();
    const charged = -ledger.reduce((sum, r) => sum + Number(r.amount), 0);
    assert.equal(report.totals.credits_charged, charged);
    assert.equal(report.totals.messages, routed.length);
    for (const route of ['primary', 'backup']) {
      const mine = routed.filter((m) => m.route === route);
      const row = report.data.find((r) => r.route === route)!;
      assert.equal(row.day, day);
      assert.equal(row.messages, mine.length);
      assert.equal(row.segments, mine.reduce((s, m) => s + Number(m.segments), 0));
      assert.equal(row.carrier_cost, row.segments * (route === 'primary' ? 3 : 2));
      assert.equal(row.margin, row.credits_charged - row.carrier_cost);
    }
    await updateRoute(p.h.ctx, 'primary', { costPerSegment: '9' });
    assert.deepEqual(await marginReport(p.h.ctx, day, day), report);
    await assert.rejects(marginReport(p.h.ctx, '2026-13-01', day), /--from/);
  });
});
