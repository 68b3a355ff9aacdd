/**
 * A route that keeps throttling (0x58, a temporary code in its failover_codes): once its own
 * retries are spent the message goes to the next route; with no other route it waits, as with a
 * single route. The connector alone, with a short throttling deadline.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { loadConfig } from '../../src/config/config.ts';
import { SmppCarrier } from '../../src/carriers/smpp/smpp-carrier.ts';
import type { OutboundMessage } from '../../src/carriers/carrier.ts';
import { TestSmsc } from './smsc.ts';

let slow: TestSmsc;
let spare: TestSmsc;
let carrier: SmppCarrier;

const message = (id: string, triedRoutes?: string[]): OutboundMessage => ({
  id,
  recipient: '+447700900123',
  sender: 'Acme',
  body: `text of ${id}`,
  encoding: 'GSM-7',
  segments: 1,
  ...(triedRoutes ? { triedRoutes } : {}),
});

before(async () => {
  slow = new TestSmsc({ systemId: 'pigeon', password: 'secret' });
  spare = new TestSmsc({ systemId: 'pigeon', password: 'secret' });
  await Promise.all([slow.listen(), spare.listen()]);
  const config = loadConfig({
    CARRIER: 'smpp',
    SMPP_SYSTEM_ID: 'pigeon',
    SMPP_PASSWORD: 'secret',
    SMPP_ROUTES: JSON.stringify([
      { name: 'slow', prefixes: ['+44'], host: '127.0.0.1', port: slow.port, priority: 2 },
      { name: 'spare', prefixes: ['+44'], host: '127.0.0.1', port: spare.port, priority: 1, failover_codes: ['0x45'] },
    ]),
  });
  carrier = new SmppCarrier(config.smpp, pino({ level: 'silent' }), Date.now, { queueDeadlineMs: 300 });
  carrier.start();
  await carrier.whenBound();
});
after(async () => {
  await carrier.close();
  await Promise.all([slow.stop(), spare.stop()]);
});

test('throttled past its retries: the next route takes it, the throttling route is remembered as tried', async () => {
  slow.answerNext(1000, 0x58);
  const [outcome] = await carrier.submit([message('msg_t1')]);
  assert.equal(outcome!.kind, 'accepted');
  assert.deepEqual(outcome!.kind === 'accepted' && outcome!.route, { name: 'spare', costPerSegment: null });
  assert.deepEqual(outcome!.triedRoutes, ['slow']);
  assert.ok(slow.submits.length >= 2, 'the throttling route retried it first');
  assert.deepEqual(slow.acknowledged, []);
  assert.deepEqual(spare.acknowledged.map((s) => s.text), ['text of msg_t1']);
});

test('with no other route left (the other tried already) a throttled message waits, as with one route', async () => {
  const [outcome] = await carrier.submit([message('msg_t2', ['spare'])]);
  assert.equal(outcome!.kind, 'retry');
  assert.deepEqual(outcome!.triedRoutes, ['spare']);
  assert.equal(spare.submits.filter((s) => s.text === 'text of msg_t2').length, 0, 'a tried route never gets it again');
});

test('a refusal that is not one of the route\'s failover codes fails the message there, another route or not', async () => {
  // The spare first now: a priority changes on the bound link, without binding again.
  carrier.setRoutes(carrier.links.map((l) => ({ ...l.route, priority: l.route.name === 'spare' ? 3 : 2 })));
  assert.equal(spare.binds, 1);
  const before = slow.submits.length;
  spare.answerNext(1, 0x0b);
  const [outcome] = await carrier.submit([message('msg_t3')]);
  assert.equal(outcome!.kind, 'rejected');
  assert.equal(outcome!.kind === 'rejected' && outcome!.errorCode, 'smpp_rinvdstadr');
  assert.deepEqual(outcome!.triedRoutes, ['spare']);
  assert.equal(slow.submits.length, before, 'not sent on to the other route');
});
