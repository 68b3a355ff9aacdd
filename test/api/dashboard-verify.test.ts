/**
 * The Verify pages (DECISIONS.md §14): the owner's /dashboard/verifications and the operator's
 * /operator/verify show verifications sent, approved and the conversion per service and country,
 * and the ranges the fraud guard blocks, with an unblock button recorded in the audit log.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { harness, type Harness } from '../helpers/harness.ts';
import { DashboardClient, signedInOperator } from '../helpers/dashboard-client.ts';
import type { VerificationsTable } from '../../src/store/database.ts';
import * as repo from '../../src/store/repositories/verify.repository.ts';
import { listAuditEvents } from '../../src/store/repositories/audit-events.repository.ts';

describe('dashboard and console: Verify', () => {
  let h: Harness;
  let owner: DashboardClient;
  let accountId: string;
  let otherId: string;

  before(async () => {
    h = await harness();
    owner = new DashboardClient(h.app);
    const form = await owner.get('/dashboard/signup');
    await owner.post('/dashboard/signup', { name: 'Code Senders', email: 'codes@example.com', password: 'correct horse battery' }, form.body);
    accountId = (await h.ctx.store.db.selectFrom('owners').selectAll().executeTakeFirstOrThrow()).account_id;
    otherId = (await h.customer()).accountId;
    const now = h.clock.ms;
    const service = (id: string, account: string, name: string) =>
      repo.insertService(h.ctx.store.db, { id, account_id: account, name, sender: 'Acme', code_length: 6, lifetime_seconds: 600, max_checks: 5, max_sends: 5, allowed_countries: null, fraud_guard: 'block', template: null, created_at: now, deleted_at: null });
    await service('vsv_signin', accountId, 'Sign-in');
    await service('vsv_other', otherId, 'Other');
    let n = 0;
    const verification = (service_id: string, account_id: string, recipient: string, country: string, status: VerificationsTable['status']) =>
      repo.insertVerification(h.ctx.store.db, {
        id: `ver_${String(++n).padStart(4, '0')}`, account_id, service_id, recipient, range_prefix: recipient.slice(0, -3), country, code_hash: null, status,
        sends: 1, checks_left: 5, message_id: null, credits_used: 1, last_sent_at: now, expires_at: now + 600_000, created_at: now, updated_at: now,
      });
    // Sign-in, GB: 4 sent, 3 approved (75 %); FR: 2 sent, none approved; another account's: 1.
    for (const [i, status] of (['approved', 'approved', 'approved', 'expired'] as const).entries()) await verification('vsv_signin', accountId, `+44770090010${i}`, 'GB', status);
    for (const i of [0, 1]) await verification('vsv_signin', accountId, `+33612345${i}00`, 'FR', 'expired');
    await verification('vsv_other', otherId, '+447700900200', 'GB', 'approved');
    const block = (account_id: string, range_prefix: string) => repo.upsertBlock(h.ctx.store.db, { account_id, range_prefix, level: 0, blocked_at: now, blocked_until: now + 12 * 3_600_000, sent: 12, approved: 0 });
    await block(accountId, '+447700901');
    await block(otherId, '+447700902');
  });
  after(() => h.close());

  test("the owner sees the account's conversion per service and country and its blocked ranges, and unblocks one", async () => {
    const page = await owner.get('/dashboard/verifications');
    assert.equal(page.statusCode, 200, page.body);
    assert.match(page.body, /href="\/dashboard\/verifications"[^>]*aria-current="page"/);
    const row = (country: string) => new RegExp(`Sign-in <code>vsv_signin</code></td><td[^>]*>${country}</td><td[^>]*>(\\d+)</td><td[^>]*>(\\d+)</td><td[^>]*>([^<]+)</td>`).exec(page.body)?.slice(1);
    assert.deepEqual(row('GB'), ['4', '3', '75 %']);
    assert.deepEqual(row('FR'), ['2', '0', '0 %']);
    assert.ok(!page.body.includes('vsv_other') && !page.body.includes('+447700902'), "another account's figures are not shown");
    assert.match(page.body, /<code>\+447700901<\/code>xxx/);

    const unblocked = await owner.post('/dashboard/verifications/unblock', { account: otherId, range: '+447700901' }, page.body);
    assert.equal(unblocked.statusCode, 200);
    assert.match(unblocked.body, /\+447700901xxx is no longer blocked/);
    assert.match(unblocked.body, /No number range is blocked/);
    assert.equal((await repo.activeBlocks(h.ctx.store.db, h.clock.ms, otherId)).length, 1, "the account field cannot reach another account's block");
    const [audit] = await listAuditEvents(h.ctx.store.db, { accountId, action: 'verify.range_unblocked' }, 10, 0);
    assert.equal(audit?.actor_type, 'member');
    assert.equal(audit?.target_id, '+447700901');
    const again = await owner.post('/dashboard/verifications/unblock', { range: '+447700901' }, page.body);
    assert.equal(again.statusCode, 404);
    assert.match(again.body, /not blocked/);
  });

  test("the operator sees every account's, and unblocks a range; a support operator reads but may not unblock", async () => {
    const ops = await signedInOperator(h.app, h.ctx);
    const page = await ops.get('/operator/verify');
    assert.equal(page.statusCode, 200, page.body);
    assert.match(page.body, /href="\/operator\/verify"[^>]*aria-current="page"/);
    assert.ok(page.body.includes(`<code>${otherId}</code>`) && page.body.includes('<code>vsv_other</code>'));
    assert.match(page.body, /<code>\+447700902<\/code>xxx/);

    const support = await signedInOperator(h.app, h.ctx, 'support@example.com', 'support');
    const read = await support.get('/operator/verify');
    assert.equal(read.statusCode, 200);
    const refused = await support.post('/operator/verify/unblock', { account: otherId, range: '+447700902' }, read.body);
    assert.equal(refused.statusCode, 403);

    const done = await ops.post('/operator/verify/unblock', { account: otherId, range: '+447700902' }, page.body);
    assert.equal(done.statusCode, 303);
    const shown = await ops.get(String(done.headers.location));
    assert.match(shown.body, /\+447700902xxx is no longer blocked for acc_/);
    assert.deepEqual(await repo.activeBlocks(h.ctx.store.db, h.clock.ms), []);
    const [audit] = await listAuditEvents(h.ctx.store.db, { accountId: otherId, action: 'verify.range_unblocked' }, 10, 0);
    assert.equal(audit?.actor_type, 'operator');
  });
});
