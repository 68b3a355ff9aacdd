/**
 * verifyWebhook against the server's own signer (src/domain/webhook-signature.ts), on a payload
 * the server really recorded for a message.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { signWebhookWithSecrets } from '../../../src/domain/webhook-signature.ts';
import { getAccount, rotateWebhookSecret, signingSecrets } from '../../../src/services/accounts/accounts.ts';
import { Pigeon, PigeonWebhookError, verifyWebhook, type WebhookEvent } from '../src/index.ts';
import { liveServer, type LiveServer } from './server.ts';

describe('verifyWebhook', () => {
  let server: LiveServer;
  let rawBody: string;
  let secret: string;
  let accountId: string;
  const now = () => Math.floor(Date.now() / 1000);

  before(async () => {
    server = await liveServer({ WEBHOOK_RETRY_DELAYS_MS: '0' });
    const customer = await server.h.customer({ credits: 10 });
    accountId = customer.accountId;
    const pigeon = new Pigeon({ apiKey: customer.key, baseUrl: server.baseUrl });
    // A recipient ending in 0000 fails after being sent: the richest payload (error_code, error_message).
    const sent = await pigeon.sms.send({ to: '+447911120000', from: 'Acme', message: 'hooked', callback_url: 'https://127.0.0.1:9/hooks' });
    await server.h.workers.drain();
    server.h.clock.advance(2000);
    await server.h.workers.drain();
    const row = await server.h.ctx.store.db
      .selectFrom('webhook_events')
      .select('payload')
      .where('message_id', '=', sent.message_id)
      .where('event', '=', 'sms.failed')
      .executeTakeFirstOrThrow();
    rawBody = row.payload;
    secret = (await getAccount(server.h.ctx, accountId)).webhook_secret;
  });
  after(() => server.close());

  const sign = (body: string, secrets: string[], t = now()) => signWebhookWithSecrets(body, secrets, t);

  test('returns the typed event for a body signed by the server', async () => {
    const headers = { 'x-pigeon-signature': sign(rawBody, [secret]), 'x-pigeon-event-id': 'evt_1', 'content-type': 'application/json' };
    const event: WebhookEvent = await verifyWebhook(rawBody, headers, secret);
    assert.deepEqual(event, JSON.parse(rawBody));
    assert.equal(event.event, 'sms.failed');
    assert.equal(event.error_code, 'subscriber_unreachable');
  });

  test('accepts fetch Headers, Node header casing and a byte body', async () => {
    const signature = sign(rawBody, [secret]);
    await verifyWebhook(rawBody, new Headers({ 'X-Pigeon-Signature': signature }), secret);
    await verifyWebhook(new TextEncoder().encode(rawBody), { 'X-Pigeon-Signature': signature }, secret);
  });

  test('during a secret rotation either secret verifies', async () => {
    const account = await rotateWebhookSecret(server.h.ctx, accountId);
    const secrets = signingSecrets(account, server.h.clock.now());
    assert.equal(secrets.length, 2);
    const headers = { 'x-pigeon-signature': sign(rawBody, secrets) };
    await verifyWebhook(rawBody, headers, secrets[0]!);
    await verifyWebhook(rawBody, headers, secrets[1]!);
    await verifyWebhook(rawBody, headers, ['wrong', secrets[1]!]);
  });

  const rejects = (reason: PigeonWebhookError['reason'], promise: Promise<unknown>) =>
    assert.rejects(promise, (err: unknown) => err instanceof PigeonWebhookError && err.reason === reason);

  test('refuses an altered body, another secret, a missing or garbled header', async () => {
    const headers = { 'x-pigeon-signature': sign(rawBody, [secret]) };
    await rejects('invalid_signature', verifyWebhook(rawBody.replace('sms.failed', 'sms.delivered'), headers, secret));
    await rejects('invalid_signature', verifyWebhook(rawBody, headers, 'another-secret'));
    await rejects('missing_signature', verifyWebhook(rawBody, {}, secret));
    await rejects('invalid_signature', verifyWebhook(rawBody, { 'x-pigeon-signature': 'v1=abc' }, secret));
  });

  test('refuses a signature older or newer than 5 minutes', async () => {
    // At a fixed instant: the machine's clock may step between signing and verifying.
    const at = now();
    await rejects('timestamp_out_of_tolerance', verifyWebhook(rawBody, { 'x-pigeon-signature': sign(rawBody, [secret], at - 301) }, secret, { nowSeconds: at }));
    await rejects('timestamp_out_of_tolerance', verifyWebhook(rawBody, { 'x-pigeon-signature': sign(rawBody, [secret], at + 301) }, secret, { nowSeconds: at }));
    await verifyWebhook(rawBody, { 'x-pigeon-signature': sign(rawBody, [secret], at - 300) }, secret, { nowSeconds: at });
    // And by the clock itself, well inside the tolerance.
    await verifyWebhook(rawBody, { 'x-pigeon-signature': sign(rawBody, [secret], now() - 290) }, secret);
  });

  test('refuses a correctly signed body that is not an event', async () => {
    const body = JSON.stringify({ hello: 'world' });
    await rejects('invalid_payload', verifyWebhook(body, { 'x-pigeon-signature': sign(body, [secret]) }, secret));
    await rejects('invalid_payload', verifyWebhook('not json', { 'x-pigeon-signature': sign('not json', [secret]) }, secret));
  });
});
