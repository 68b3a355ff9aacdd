/**
 * Twilio's Verify v2 through the official `twilio` package, versions 5 and 6, with only
 * `client.verify.baseUrl` changed to a Pigeon server on 127.0.0.1 (DECISIONS.md §14): services,
 * verifications, checks, cancel and approve, fetch, and the error codes as RestExceptions. Codes
 * are learned as a phone learns them: from the text the carrier receives.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { harness, type Harness } from '../helpers/harness.ts';
import { lastCode as codeAt, phoneInbox, type PhoneInbox } from '../helpers/phone-inbox.ts';
import { twilioCredentials } from '../../src/services/twilio/credentials.ts';
import { serviceIdOfSid, verificationIdOfSid } from '../../src/domain/twilio-sid.ts';

const require = createRequire(import.meta.url);

type Resource = Record<string, any>;
type Client = {
  api: { baseUrl: string };
  messages: { list(p?: Record<string, unknown>): Promise<Resource[]> };
  verify: {
    baseUrl: string;
    v2: {
      services: {
        create(p: Record<string, unknown>): Promise<Resource>;
        (sid: string): {
          fetch(): Promise<Resource>;
          verifications: { create(p: Record<string, unknown>): Promise<Resource>; (sid: string): { fetch(): Promise<Resource>; update(p: Record<string, unknown>): Promise<Resource> } };
          verificationChecks: { create(p: Record<string, unknown>): Promise<Resource> };
        };
      };
    };
  };
};
type TwilioFactory = (sid: string, password: string) => Client;

let h: Harness;
let base: string;
let inbox: PhoneInbox;

before(async () => {
  h = await harness({ SIM_DELIVERY_DELAY_MS: '0' });
  inbox = phoneInbox(h);
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});
after(async () => {
  await h.close();
});

const lastCode = (phone: string) => codeAt(h, inbox, phone);

const rejects = (p: Promise<unknown>, status: number, code: number) =>
  assert.rejects(p, (e: any) => {
    assert.equal(e.status, status, e.message);
    assert.equal(e.code, code, e.message);
    assert.ok(e.moreInfo);
    return true;
  });

for (const [index, version] of (['twilio5', 'twilio6'] as const).entries()) {
  describe(`Verify v2 with the official ${version} client`, () => {
    let client: Client;
    let key: string;
    let serviceSid: string;
    // Each version's numbers in ranges of their own.
    const phone = (n: number) => `+4477009${index}${String(n).padStart(4, '0')}`;

    before(async () => {
      const c = await h.customer({ credits: 1000 });
      key = c.key;
      const creds = await twilioCredentials(h.ctx, c.accountId);
      client = (require(version) as TwilioFactory)(creds.account_sid, creds.auth_token);
      client.verify.baseUrl = base; // the one changed line
      client.api.baseUrl = base; // for the Messages API, to read the codes' messages
      const service = await client.verify.v2.services.create({ friendlyName: 'Acme', codeLength: 6 });
      serviceSid = service.sid;
    });

    test('a service made here is the same record as /v1 and reads back', async () => {
      assert.match(serviceSid, /^VA[0-9a-f]{32}$/);
      const fetched = await client.verify.v2.services(serviceSid).fetch();
      assert.equal(fetched.friendlyName, 'Acme');
      assert.equal(fetched.codeLength, 6);
      assert.ok(fetched.dateCreated instanceof Date && !Number.isNaN(fetched.dateCreated.getTime()));
      const v1 = await h.request('GET', `/v1/verify/services/${serviceIdOfSid(serviceSid)}`, { key });
      assert.equal(v1.statusCode, 200, v1.body);
      assert.equal(v1.json().data.name, 'Acme');
      assert.equal(v1.json().data.from, 'Acme');
    });

    test('a code is sent, a wrong one is refused, the right one approves once', async () => {
      const to = phone(1);
      const v = await client.verify.v2.services(serviceSid).verifications.create({ to, channel: 'sms' });
      assert.match(v.sid, /^VE[0-9a-f]{32}$/);
      assert.equal(v.serviceSid, serviceSid);
      assert.equal(v.status, 'pending');
      assert.equal(v.channel, 'sms');
      assert.equal(v.valid, false);
      const code = await lastCode(to);
      assert.equal(code.length, 6);
      // The code's message, read through Twilio's Messages API, has the code masked.
      const [sms] = await client.messages.list({ to });
      assert.equal(sms?.body, 'Your Acme code is ••••••');
      const wrong = code === '000000' ? '111111' : '000000';
      const miss = await client.verify.v2.services(serviceSid).verificationChecks.create({ to, code: wrong });
      assert.equal(miss.status, 'pending');
      assert.equal(miss.valid, false);
      const hit = await client.verify.v2.services(serviceSid).verificationChecks.create({ to, code });
      assert.equal(hit.status, 'approved');
      assert.equal(hit.valid, true);
      assert.equal(hit.sid, v.sid);
      assert.equal((await client.verify.v2.services(serviceSid).verifications(v.sid).fetch()).status, 'approved');
      // The same verification under /v1.
      const v1 = await h.request('GET', `/v1/verify/verifications/${verificationIdOfSid(v.sid)}`, { key });
      assert.equal(v1.json().data.status, 'approved');
      await rejects(client.verify.v2.services(serviceSid).verificationChecks.create({ to, code }), 404, 20404);
    });

    test('a check by VerificationSid; cancel and approve by Status', async () => {
      const to = phone(2);
      const v = await client.verify.v2.services(serviceSid).verifications.create({ to, channel: 'sms' });
      const code = await lastCode(to);
      const hit = await client.verify.v2.services(serviceSid).verificationChecks.create({ verificationSid: v.sid, code });
      assert.equal(hit.status, 'approved');
      const canceled = await client.verify.v2.services(serviceSid).verifications.create({ to: phone(3), channel: 'sms' });
      assert.equal((await client.verify.v2.services(serviceSid).verifications(canceled.sid).update({ status: 'canceled' })).status, 'canceled');
      await rejects(client.verify.v2.services(serviceSid).verificationChecks.create({ to: phone(3), code: '123456' }), 404, 20404);
      const approved = await client.verify.v2.services(serviceSid).verifications.create({ to: phone(4), channel: 'sms' });
      assert.equal((await client.verify.v2.services(serviceSid).verifications(approved.sid).update({ status: 'approved' })).status, 'approved');
      await rejects(client.verify.v2.services(serviceSid).verifications(approved.sid).update({ status: 'pending' }), 400, 60200);
    });

    test('errors arrive as RestExceptions with Verify codes', async () => {
      const svc = client.verify.v2.services(serviceSid);
      await rejects(svc.verifications.create({ to: phone(5), channel: 'call' }), 400, 60200);
      await rejects(svc.verifications.create({ to: 'nope', channel: 'sms' }), 400, 60200);
      await rejects(client.verify.v2.services(`VA${'0'.repeat(32)}`).fetch(), 404, 20404);
      await rejects(svc.verificationChecks.create({ to: phone(6), code: '123456' }), 404, 20404);

      // Checks exhausted: five wrong checks, then 60202.
      await svc.verifications.create({ to: phone(7), channel: 'sms' });
      const code = await lastCode(phone(7));
      const wrong = code === '000000' ? '111111' : '000000';
      for (let i = 0; i < 5; i++) assert.equal((await svc.verificationChecks.create({ to: phone(7), code: wrong })).valid, false);
      await rejects(svc.verificationChecks.create({ to: phone(7), code }), 429, 60202);

      // Sends exhausted: the same code four more times, 30 s apart, then 60203.
      const first = await svc.verifications.create({ to: phone(8), channel: 'sms' });
      for (let i = 0; i < 4; i++) {
        h.clock.advance(30_000);
        assert.equal((await svc.verifications.create({ to: phone(8), channel: 'sms' })).sid, first.sid);
      }
      h.clock.advance(30_000);
      await rejects(svc.verifications.create({ to: phone(8), channel: 'sms' }), 429, 60203);

      // Country: a service limited to GB refuses another country's number.
      const patched = await h.request('PATCH', `/v1/verify/services/${serviceIdOfSid(serviceSid)}`, { key, body: { allowed_countries: ['GB'] } });
      assert.equal(patched.statusCode, 200, patched.body);
      await rejects(svc.verifications.create({ to: '+33612345678', channel: 'sms' }), 403, 60605);
    });

    test('the fraud guard answers 60410 once a range converts below 20 %', async () => {
      const pumped = await client.verify.v2.services.create({ friendlyName: 'Pumped' });
      const svc = client.verify.v2.services(pumped.sid);
      const range = (n: number) => `+4477019${index}0${String(n).padStart(3, '0')}`;
      for (let n = 0; n < 10; n++) await svc.verifications.create({ to: range(n), channel: 'sms' });
      await rejects(svc.verifications.create({ to: range(10), channel: 'sms' }), 403, 60410);
      await h.workers.drain();
      assert.equal(inbox.get(range(10)), undefined, 'no code reached the blocked number');
    });
  });
}
