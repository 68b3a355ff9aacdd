/**
 * examples/twilio-app end to end against `pigeon serve` in a child process (what `npm start`
 * runs), with both major versions of the official `twilio` package: it sends with a status
 * callback, receives a message to its number and answers it with TwiML, and every callback it
 * gets passes `validateRequest`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTwilioApp, type TwilioApp, type TwilioPackage } from '../../examples/twilio-app/app.ts';
import { makeTestCa, type TestCa } from '../api/webhooks-receiver.ts';
import { createCustomer } from '../helpers/customers.ts';
import { freePort, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { processDatabase, serviceContext } from '../helpers/test-store.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { assignNumber } from '../../src/services/numbers/numbers.ts';
import { twilioCredentials } from '../../src/services/twilio/credentials.ts';
import type { Store } from '../../src/store/connect.ts';

const require = createRequire(import.meta.url);
const NUMBER = '+447700900777';

describe('examples/twilio-app against pigeon serve', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-twilio-app-'));
  const database = processDatabase('twilio_app', dir);
  let store: Store;
  let ca: TestCa;
  let server: PigeonProcess;
  let api: string;
  let key: string;
  let sid: string;
  let token: string;
  const apps = new Map<string, TwilioApp>();
  const listeners: https.Server[] = [];

  before(async () => {
    ca = makeTestCa();
    store = await database.open();
    const ctx = serviceContext(store);
    const customer = await createCustomer(ctx, { name: 'Movers', email: 'movers@example.com', credits: 50 });
    key = customer.key;
    ({ account_sid: sid, auth_token: token } = await twilioCredentials(ctx, customer.accountId));
    // One app per package version, each on its own HTTPS port; the number's SMS URL names the first.
    for (const version of ['twilio5', 'twilio6']) {
      const listener = https.createServer({ key: ca.key, cert: ca.cert }, (req, res) => apps.get(version)!.handler(req, res));
      await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
      listeners.push(listener);
      const publicUrl = `https://127.0.0.1:${(listener.address() as AddressInfo).port}`;
      apps.set(version, createTwilioApp({ twilio: require(version) as TwilioPackage, accountSid: sid, authToken: token, apiBaseUrl: 'set below', publicUrl }));
    }
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    for (const app of apps.values()) app.client.api.baseUrl = api;
    await assignNumber(ctx, customer.accountId, NUMBER, undefined, `https://127.0.0.1:${(listeners[0]!.address() as AddressInfo).port}/sms`);
    server = await startPigeon(['serve'], {
      DATABASE_URL: database.url,
      PORT: String(port),
      PUBLIC_URL: api,
      SMPP_SERVER_PORT: '0',
      SIM_DELIVERY_DELAY_MS: '0',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      NODE_EXTRA_CA_CERTS: ca.caFile,
    });
  });
  after(async () => {
    await server?.stop();
    for (const l of listeners) await new Promise<void>((resolve) => l.close(() => resolve()));
    await database.close();
    ca.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const version of ['twilio5', 'twilio6']) {
    test(`${version}: a send reports sent then delivered to the app's status callback, verified`, async () => {
      const app = apps.get(version)!;
      const message = await app.send('+447700900123', NUMBER, `Hello from ${version}`);
      assert.match(message.sid, /^SM[0-9a-f]{32}$/);
      assert.equal(message.status, 'queued');
      const statuses = await waitFor(() => {
        const seen = app.statuses.filter((s) => s.sid === message.sid).map((s) => s.status);
        return seen.length >= 2 && seen;
      }, { timeout: 20_000 });
      assert.deepEqual(statuses, ['sent', 'delivered']);
      assert.equal((await app.client.messages(message.sid).fetch()).status, 'delivered');
      const failed = await app.send('+447700900000', NUMBER, 'to a phone that is off');
      const last = await waitFor(() => app.statuses.find((s) => s.sid === failed.sid && s.status === 'undelivered'), { timeout: 20_000 });
      assert.equal(last.errorCode, '30003');
      assert.equal(app.forged, 0);
    });
  }

  test('a question to the number is answered with the TwiML reply; a plain message is only acknowledged', async () => {
    const app = apps.get('twilio5')!;
    const inbound = (from: string, message: string) =>
      fetch(`${api}/v1/simulator/inbound`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ from, to: NUMBER, message }),
      });
    assert.equal((await inbound('+447700900301', 'Are you open on Sunday?')).status, 201);
    assert.equal((await inbound('+447700900302', 'Thanks!')).status, 201);
    await waitFor(() => app.received.length >= 2, { timeout: 20_000 });
    assert.deepEqual(app.received.map((r) => r.body).sort(), ['Are you open on Sunday?', 'Thanks!']);
    // An inbound post is recorded delivered only after its answer was acted on.
    await waitFor(async () => {
      const res = await fetch(`${api}/v1/webhooks/events?limit=100`, { headers: { authorization: `Bearer ${key}` } });
      const events = ((await res.json()) as { data: { event: string; status: string }[] }).data.filter((e) => e.event === 'twilio.inbound');
      return events.length === 2 && events.every((e) => e.status === 'delivered');
    }, { timeout: 20_000 });
    const listed = await waitFor(async () => {
      const res = await fetch(`${api}/2010-04-01/Accounts/${sid}/Messages.json?To=%2B447700900301`, { headers: { authorization: `Basic ${Buffer.from(`${sid}:${token}`).toString('base64')}` } });
      const body = (await res.json()) as { messages: { body: string; from: string }[] };
      return body.messages.length > 0 && body.messages;
    }, { timeout: 20_000 });
    assert.deepEqual(listed.map((m) => [m.from, m.body]), [[NUMBER, 'Thanks for asking! We will call you back about: Are you open on Sunday?']]);
    const plain = await fetch(`${api}/2010-04-01/Accounts/${sid}/Messages.json?To=%2B447700900302`, { headers: { authorization: `Basic ${Buffer.from(`${sid}:${token}`).toString('base64')}` } });
    assert.deepEqual(((await plain.json()) as { messages: unknown[] }).messages, []);
    assert.equal(app.forged, 0);
  });
});
