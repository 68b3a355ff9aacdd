/**
 * The Twilio-compatible Messages API through the official `twilio` package, versions 5 and 6,
 * with only `client.api.baseUrl` changed to a Pigeon server on 127.0.0.1: create, list with
 * paging, fetch, cancel, redact, delete, and errors as the client's RestException.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { harness, type Harness } from '../helpers/harness.ts';
import { twilioCredentials } from '../../src/services/twilio/credentials.ts';
import { messageIdOfSid } from '../../src/domain/twilio-sid.ts';

const require = createRequire(import.meta.url);

type Client = {
  api: { baseUrl: string };
  messages: {
    create(p: Record<string, unknown>): Promise<Record<string, any>>;
    list(p?: Record<string, unknown>): Promise<Record<string, any>[]>;
    page(p?: Record<string, unknown>): Promise<{ instances: Record<string, any>[]; nextPage(): Promise<{ instances: Record<string, any>[] } | undefined>; nextPageUrl?: string }>;
    (sid: string): { fetch(): Promise<Record<string, any>>; update(p: Record<string, unknown>): Promise<Record<string, any>>; remove(): Promise<boolean> };
  };
};
type TwilioFactory = (sid: string, password: string) => Client;

let h: Harness;
let base: string;

before(async () => {
  h = await harness({ SIM_DELIVERY_DELAY_MS: '1000' });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});
after(async () => {
  await h.close();
});

for (const version of ['twilio5', 'twilio6'] as const) {
  describe(`the official ${version} client against Pigeon`, () => {
    let sid: string;
    let token: string;
    let client: Client;
    let key: string;
    let accountId: string;

    const make = (user: string, password: string): Client => {
      const twilio = require(version) as TwilioFactory;
      const c = twilio(user, password);
      c.api.baseUrl = base;
      return c;
    };

    before(async () => {
      const c = await h.customer({ credits: 100 });
      key = c.key;
      accountId = c.accountId;
      const creds = await twilioCredentials(h.ctx, c.accountId);
      sid = creds.account_sid;
      token = creds.auth_token;
      client = make(sid, token);
    });

    test('create answers the Message resource; fetch reads it back as it moves on', async () => {
      const m = await client.messages.create({ to: '+447700900123', from: 'Acme', body: 'Hello from Twilio code' });
      assert.match(m.sid, /^SM[0-9a-f]{32}$/);
      assert.equal(m.accountSid, sid);
      assert.equal(m.status, 'queued');
      assert.equal(m.to, '+447700900123');
      assert.equal(m.from, 'Acme');
      assert.equal(m.body, 'Hello from Twilio code');
      assert.equal(m.numSegments, '1');
      assert.equal(m.numMedia, '0');
      assert.equal(m.direction, 'outbound-api');
      assert.equal(m.apiVersion, '2010-04-01');
      assert.equal(m.price, null);
      assert.equal(m.priceUnit, 'credits');
      assert.ok(m.dateCreated instanceof Date && !Number.isNaN(m.dateCreated.getTime()), 'the client parses the RFC 2822 date');
      assert.equal(m.dateCreated.getTime(), h.clock.ms - (h.clock.ms % 1000));
      // The same message under /v1.
      const v1 = await h.request('GET', `/v1/sms/delivery-reports?message_id=${messageIdOfSid(m.sid)}`, { key });
      assert.equal(v1.statusCode, 200, v1.body);
      assert.equal(v1.json().data.length, 1);
      assert.equal(v1.json().data[0].to, '+447700900123');
      await h.workers.drain();
      h.clock.advance(1000);
      await h.workers.drain();
      const fetched = await client.messages(m.sid).fetch();
      assert.equal(fetched.status, 'delivered');
      assert.equal(fetched.price, '-1.00');
      assert.ok(fetched.dateSent instanceof Date);
      assert.equal(fetched.errorCode, null);
    });

    test('a failure reads as undelivered with its Twilio error code', async () => {
      const m = await client.messages.create({ to: '+447700900000', from: 'Acme', body: 'to an unreachable phone' });
      await h.workers.drain();
      h.clock.advance(1000);
      await h.workers.drain();
      const fetched = await client.messages(m.sid).fetch();
      assert.equal(fetched.status, 'undelivered');
      assert.equal(fetched.errorCode, 30003);
      assert.ok(fetched.errorMessage);
    });

    test('list pages through every message with PageSize, following next_page_uri', async () => {
      for (let i = 0; i < 5; i++) await client.messages.create({ to: `+44770090100${i}`, from: 'Acme', body: `page ${i}` });
      h.clock.advance(1);
      const all = await client.messages.list({ pageSize: 2 });
      assert.equal(all.length, 7);
      assert.deepEqual(all.slice(0, 5).map((m) => m.body), ['page 4', 'page 3', 'page 2', 'page 1', 'page 0']);
      const page = await client.messages.page({ pageSize: 3 });
      assert.equal(page.instances.length, 3);
      const next = await page.nextPage();
      assert.deepEqual(next?.instances.map((m) => m.body), ['page 1', 'page 0', 'to an unreachable phone']);
      const filtered = await client.messages.list({ to: '+447700901003' });
      assert.deepEqual(filtered.map((m) => m.body), ['page 3']);
      // Only the two messages of the tests before were sent (the five above are still queued).
      const sent = await client.messages.list({ dateSentAfter: new Date(h.clock.ms - 24 * 3600_000), dateSentBefore: new Date(h.clock.ms) });
      assert.deepEqual(sent.map((m) => m.body).sort(), ['Hello from Twilio code', 'to an unreachable phone']);
      assert.deepEqual(await client.messages.list({ dateSentBefore: new Date(h.clock.ms - 24 * 3600_000) }), []);
    });

    test('a scheduled message is canceled; a final one is redacted, then deleted', async () => {
      const sendAt = new Date(h.clock.ms + 3600_000);
      const scheduled = await client.messages.create({ to: '+447700900124', from: 'Acme', body: 'later', sendAt, scheduleType: 'fixed' });
      assert.equal(scheduled.status, 'scheduled');
      const canceled = await client.messages(scheduled.sid).update({ status: 'canceled' });
      assert.equal(canceled.status, 'canceled');
      assert.equal(canceled.price, '0.00');
      const redacted = await client.messages(scheduled.sid).update({ body: '' });
      assert.equal(redacted.body, '');
      assert.equal(redacted.to, '+44770090XXXX');
      assert.equal(await client.messages(scheduled.sid).remove(), true);
      await assert.rejects(client.messages(scheduled.sid).fetch(), (e: any) => e.status === 404 && e.code === 20404);
    });

    test('errors arrive as RestException with Twilio codes', async () => {
      const expect = async (p: Promise<unknown>, status: number, code: number) =>
        assert.rejects(p, (e: any) => {
          assert.equal(e.status, status, e.message);
          assert.equal(e.code, code, e.message);
          assert.ok(e.moreInfo);
          return true;
        });
      await expect(client.messages.create({ to: 'nope', from: 'Acme', body: 'x' }), 400, 21211);
      await expect(client.messages.create({ to: '+447700900123', from: 'Unknown', body: 'x' }), 400, 21606);
      await expect(client.messages.create({ to: '+447700900123', from: 'Acme' }), 400, 21602);
      await expect(client.messages.create({ to: '+447700900123', from: 'Acme', body: 'x'.repeat(1601) }), 400, 21617);
      await expect(client.messages.create({ to: '+447700900123', from: 'Acme', body: 'x', mediaUrl: ['https://127.0.0.1/cat.png'] }), 400, 21620);
      await expect(client.messages.create({ to: '+447700900123', messagingServiceSid: 'MG00000000000000000000000000000000', body: 'x' }), 400, 21701);
      await expect(client.messages.create({ to: '+447700900123', from: 'Acme', body: 'x', statusCallback: 'http://127.0.0.1/cb' }), 400, 21609);
      const pending = await client.messages.create({ to: '+447700901111', from: 'Acme', body: 'never final' });
      await expect(client.messages(pending.sid).remove(), 400, 20009);
      await expect(client.messages(pending.sid).update({ status: 'canceled' }), 400, 30409);
      await expect(make(sid, 'f'.repeat(32)).messages.list(), 401, 20003);
      const other = await h.customer({ credits: 1 });
      const otherCreds = await twilioCredentials(h.ctx, other.accountId);
      await expect(make(otherCreds.account_sid, key).messages.list(), 401, 20003);
      await expect(make(otherCreds.account_sid, otherCreds.auth_token).messages.create({ to: '+447700900123', from: 'Acme', body: 'x'.repeat(400) }), 400, 20005);
    });

    test('an API key of the account works as the password, with its scopes', async () => {
      const viaKey = make(sid, key);
      assert.ok((await viaKey.messages.list({ limit: 1 })).length === 1);
      const { createApiKey } = await import('../../src/services/keys/api-keys.ts');
      const readOnly = await createApiKey(h.ctx, accountId, { label: 'reports', scopes: 'reports:read' });
      const limited = make(sid, readOnly.key);
      assert.equal((await limited.messages.list({ limit: 1 })).length, 1);
      await assert.rejects(limited.messages.create({ to: '+447700900123', from: 'Acme', body: 'x' }), (e: any) => e.status === 403 && e.code === 20403);
    });
  });
}
