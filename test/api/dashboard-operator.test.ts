/**
 * The operator's dashboard and the owner's e-mail: the review queue with documents, approve /
 * reject / request information, the mail outbox (no SMTP_URL), real SMTP delivery to a local
 * server, retries when SMTP fails, and accounts (search, top-up, suspend/resume).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { SMTPServer } from 'smtp-server';
import { harness, type Harness } from '../helpers/harness.ts';
import { csrfToken, DashboardClient, TINY_PDF } from '../helpers/dashboard-client.ts';
import { createOperator } from '../../src/services/auth/operators.ts';
import { approveSenderId, registerSenderId } from '../../src/services/sender-ids/sender-ids.ts';
import { MAIL_RETRY_DELAYS_MS } from '../../src/services/mail/mail.ts';
import { createAccount } from '../../src/services/accounts/accounts.ts';

const PASSWORD = 'correct horse battery';

async function owner(h: Harness, email: string) {
  const client = new DashboardClient(h.app);
  const form = await client.get('/dashboard/signup');
  assert.equal((await client.post('/dashboard/signup', { name: `Owner ${email}`, email, password: PASSWORD }, form.body)).statusCode, 303);
  return client;
}

async function operator(h: Harness) {
  await createOperator(h.ctx, 'ops@example.com', 'operator password');
  const client = new DashboardClient(h.app);
  const form = await client.get('/operator/login');
  const res = await client.post('/operator/login', { email: 'ops@example.com', password: 'operator password' }, form.body);
  assert.equal(res.statusCode, 303);
  assert.ok(client.lastSetCookie.some((c) => c.startsWith('pigeon_operator=') && /Path=\/operator/.test(c) && /HttpOnly/.test(c) && /SameSite=Lax/.test(c)));
  return client;
}

async function register(client: DashboardClient, name: string, withDocument: boolean) {
  const page = await client.get('/dashboard/sender-ids');
  const files = withDocument ? [{ name: 'documents', filename: `${name}.pdf`, type: 'application/pdf', bytes: TINY_PDF }] : [];
  const res = await client.postMultipart('/dashboard/sender-ids', { _csrf: csrfToken(page.body), name }, files);
  assert.equal(res.statusCode, 303, res.body);
}

/** The id of a Sender ID in the operator's queue, found by its name. */
function queued(queue: string, name: string): string {
  const m = new RegExp(`id="review-([^"]+)"[^>]*>\\s*<h2[^>]*>${name} `).exec(queue);
  assert.ok(m, `${name} is in the queue`);
  return m[1]!;
}

describe('dashboard: operator review and mail outbox', () => {
  let h: Harness;
  let ops: DashboardClient;
  before(async () => {
    h = await harness();
    ops = await operator(h);
  });
  after(() => h.close());

  test('the operator area needs an operator session', async () => {
    const res = await new DashboardClient(h.app).get('/operator/sender-ids');
    assert.equal(res.statusCode, 303);
    assert.equal(res.headers.location, '/operator/login');
    const bad = new DashboardClient(h.app);
    const form = await bad.get('/operator/login');
    assert.equal((await bad.post('/operator/login', { email: 'ops@example.com', password: 'wrong password!' }, form.body)).statusCode, 401);
  });

  test('approve: the owner sees Approved and a mail waits in the outbox', async () => {
    const alice = await owner(h, 'alice@example.com');
    await register(alice, 'AliceCo', true);
    const queue = await ops.get('/operator/sender-ids');
    assert.equal(queue.statusCode, 200);
    const id = queued(queue.body, 'AliceCo');
    assert.match(queue.body, /AliceCo\.pdf/);
    const docHref = /href="(\/operator\/documents\/[^"]+)">AliceCo\.pdf/.exec(queue.body)![1]!;
    const doc = await ops.get(docHref);
    assert.deepEqual(doc.rawPayload, TINY_PDF);

    const res = await ops.post(`/operator/sender-ids/${id}/approve`, {}, queue.body);
    assert.equal(res.statusCode, 303);
    assert.match((await alice.get('/dashboard/sender-ids')).body, /badge-approved">Approved/);
    assert.doesNotMatch((await ops.get('/operator/sender-ids')).body, /AliceCo/);

    await h.workers.drain();
    const mail = await h.ctx.store.db.selectFrom('mail_outbox').selectAll().where('to_address', '=', 'alice@example.com').execute();
    assert.equal(mail.length, 1);
    assert.equal(mail[0]!.status, 'held');
    assert.match(mail[0]!.subject, /AliceCo approved/);
    const outbox = await ops.get('/operator/outbox');
    assert.match(outbox.body, /alice@example\.com/);
    assert.match(outbox.body, /Sender ID AliceCo approved/);
    assert.match(outbox.body, /badge-held/);
  });

  test('reject with a reason, and request information with a note', async () => {
    const bob = await owner(h, 'bob@example.com');
    await register(bob, 'BobBank', false);
    await register(bob, 'BobShop', false);
    let queue = await ops.get('/operator/sender-ids');
    const noReason = await ops.post(`/operator/sender-ids/${queued(queue.body, 'BobBank')}/reject`, { reason: ' ' }, queue.body);
    assert.equal(noReason.statusCode, 400);
    await ops.post(`/operator/sender-ids/${queued(queue.body, 'BobBank')}/reject`, { reason: 'Looks like a <bank> name' }, queue.body);
    await ops.post(`/operator/sender-ids/${queued(queue.body, 'BobShop')}/request-info`, { note: 'Send the trade-register extract' }, queue.body);
    const page = await bob.get('/dashboard/sender-ids');
    assert.match(page.body, /badge-rejected">Rejected/);
    assert.match(page.body, /Looks like a &lt;bank&gt; name/);
    assert.match(page.body, /Send the trade-register extract/);
    queue = await ops.get('/operator/sender-ids');
    assert.match(queue.body, /Information requested:<\/strong> Send the trade-register extract/);
    await h.workers.drain();
    const subjects = (await h.ctx.store.db.selectFrom('mail_outbox').select('subject').where('to_address', '=', 'bob@example.com').execute()).map((m) => m.subject).sort();
    assert.deepEqual(subjects, ['Sender ID BobBank rejected', 'Sender ID BobShop: more information needed']);
    const body = await h.ctx.store.db.selectFrom('mail_outbox').select('body_text').where('subject', '=', 'Sender ID BobBank rejected').executeTakeFirstOrThrow();
    assert.match(body.body_text, /Reason: Looks like a <bank> name/);
  });

  test('accounts: search, top-up, suspend and resume', async () => {
    await owner(h, 'carol@example.com');
    const list = await ops.get('/operator/accounts?q=carol');
    assert.match(list.body, /carol@example\.com/);
    assert.doesNotMatch(list.body, /alice@example\.com/);
    const accountId = /id="credits-([^"]+)"/.exec(list.body)![1]!;
    const topup = await ops.post(`/operator/accounts/${accountId}/credits`, { amount: '250', back: '/operator/accounts?q=carol' }, list.body);
    assert.equal(topup.statusCode, 303);
    assert.match(String(topup.headers.location), /^\/operator\/accounts\?q=carol&done=/);
    assert.match((await ops.get('/operator/accounts?q=carol')).body, new RegExp(`id="credits-${accountId}">250<`));
    const bad = await ops.post(`/operator/accounts/${accountId}/credits`, { amount: '-5' }, list.body);
    assert.equal(bad.statusCode, 400);
    await ops.post(`/operator/accounts/${accountId}/suspend`, {}, list.body);
    assert.match((await ops.get('/operator/accounts?q=carol')).body, /badge-suspended/);
    await ops.post(`/operator/accounts/${accountId}/resume`, {}, list.body);
    assert.match((await ops.get('/operator/accounts?q=carol')).body, /badge-active/);
    const noCsrf = await ops.post(`/operator/accounts/${accountId}/suspend`, {});
    assert.equal(noCsrf.statusCode, 403);
  });
});

describe('dashboard: mail through SMTP', () => {
  test('a decision is mailed through SMTP_URL to a local SMTP server', async () => {
    const received: string[] = [];
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData(stream, _session, callback) {
        let text = '';
        stream.on('data', (c: Buffer) => (text += c.toString()));
        stream.on('end', () => {
          received.push(text);
          callback();
        });
      },
    });
    server.listen(0, '127.0.0.1');
    await once(server.server, 'listening');
    const port = (server.server.address() as AddressInfo).port;
    const h = await harness({ SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_FROM: 'Pigeon <noreply@pigeon.test>' });
    try {
      const account = await createAccount(h.ctx, { name: 'Dana', email: 'dana@example.com' });
      const sender = await registerSenderId(h.ctx, account.id, 'DanaCo');
      await approveSenderId(h.ctx, sender.id);
      await h.workers.drain();
      assert.equal(received.length, 1);
      assert.match(received[0]!, /Subject: Sender ID DanaCo approved/);
      assert.match(received[0]!, /To: dana@example\.com/);
      const mail = await h.ctx.store.db.selectFrom('mail_outbox').selectAll().executeTakeFirstOrThrow();
      assert.equal(mail.status, 'sent');
    } finally {
      await h.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  test('when SMTP fails, the decision stands and the mail is retried with backoff', async () => {
    // Port 1 on the loopback refuses connections at once.
    const h = await harness({ SMTP_URL: 'smtp://127.0.0.1:1' });
    try {
      const account = await createAccount(h.ctx, { name: 'Erin', email: 'erin@example.com' });
      const sender = await registerSenderId(h.ctx, account.id, 'ErinCo');
      const decided = await approveSenderId(h.ctx, sender.id);
      assert.equal(decided.status, 'approved');
      await h.workers.drain();
      let mail = await h.ctx.store.db.selectFrom('mail_outbox').selectAll().executeTakeFirstOrThrow();
      assert.equal(mail.status, 'queued');
      assert.equal(mail.attempts, 1);
      assert.ok(mail.last_error);
      const job = await h.ctx.store.db.selectFrom('jobs').selectAll().where('queue', '=', 'mail').executeTakeFirstOrThrow();
      assert.equal(Number(job.run_at), h.clock.ms + MAIL_RETRY_DELAYS_MS[0]!);
      for (const delay of MAIL_RETRY_DELAYS_MS) {
        h.clock.advance(delay);
        await h.workers.drain();
      }
      mail = await h.ctx.store.db.selectFrom('mail_outbox').selectAll().executeTakeFirstOrThrow();
      assert.equal(mail.status, 'failed');
      assert.equal(mail.attempts, MAIL_RETRY_DELAYS_MS.length + 1);
      assert.equal(await h.ctx.store.db.selectFrom('jobs').select('id').where('queue', '=', 'mail').executeTakeFirst(), undefined);
    } finally {
      await h.close();
    }
  });
});
