/**
 * Two-factor sign-in of the dashboard through HTTP (Fastify inject), with codes computed from the
 * secret the page shows and the harness's clock: set-up confirmed by a code, recovery codes shown
 * once and usable once, the code step after the password, a time step not accepted twice, wrong
 * codes under the login lockout, an owner requiring two-factor of every member and resetting a
 * member's; each change recorded in the audit log with its actor and target, never a secret or code.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { harness, type Harness } from '../helpers/harness.ts';
import { DashboardClient, dashboardLogIn, signedInOperator, signedUpOwner } from '../helpers/dashboard-client.ts';
import { totpCodeAt } from '../../src/services/auth/totp.ts';
import { operatorCommands } from '../../src/cli/commands/operator.ts';
import { actingAs, cliActor } from '../../src/services/audit/audit.ts';
import { auditRecords, wholeAuditLog } from '../helpers/audit.ts';

const PASSWORD = 'correct horse battery';
const STEP = 30_000;

const signUp = (h: Harness, email: string) => signedUpOwner(h.app, email, PASSWORD);
const logIn = (h: Harness, email: string, password = PASSWORD) => dashboardLogIn(h.app, email, password);

/** Turns two-factor on from Settings → Security: the secret shown and the recovery codes. */
async function setUp(h: Harness, client: DashboardClient): Promise<{ secret: string; recovery: string[] }> {
  const off = await client.get('/dashboard/settings/security');
  assert.equal(off.statusCode, 200);
  assert.equal((await client.post('/dashboard/settings/security/start', {}, off.body)).statusCode, 303);
  const shown = await client.get('/dashboard/settings/security');
  assert.match(shown.body, /<svg[^>]*>/, 'a QR code');
  const secret = /id="totp-secret">([A-Z2-7]+)</.exec(shown.body)![1]!;
  const on = await client.post('/dashboard/settings/security/confirm', { code: totpCodeAt(secret, h.clock.now()) }, shown.body);
  assert.equal(on.statusCode, 200, on.body);
  const recovery = [...on.body.matchAll(/<li><code>([a-z2-7-]+)<\/code><\/li>/g)].map((m) => m[1]!);
  return { secret, recovery };
}

async function codeStep(client: DashboardClient, code: string) {
  const form = await client.get('/dashboard/login/code');
  assert.equal(form.statusCode, 200);
  return client.post('/dashboard/login/code', { code }, form.body);
}

describe('dashboard two-factor', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('set-up shows a QR code and the secret, and turns on only after a valid code; 10 recovery codes are shown once and stored hashed', async () => {
    const client = await signUp(h, 'ann@example.com');
    const off = await client.get('/dashboard/settings/security');
    assert.match(off.body, /id="two-factor-off"/);
    await client.post('/dashboard/settings/security/start', {}, off.body);
    const shown = await client.get('/dashboard/settings/security');
    const secret = /id="totp-secret">([A-Z2-7]+)</.exec(shown.body)![1]!;
    const wrong = totpCodeAt(secret, h.clock.now() + 5 * STEP);
    const refused = await client.post('/dashboard/settings/security/confirm', { code: wrong }, shown.body);
    assert.equal(refused.statusCode, 401);
    const row = await h.ctx.store.db.selectFrom('owners').selectAll().where('email', '=', 'ann@example.com').executeTakeFirstOrThrow();
    assert.equal(row.totp_enabled_at, null, 'not on after a wrong code');

    const on = await client.post('/dashboard/settings/security/confirm', { code: totpCodeAt(secret, h.clock.now()) }, shown.body);
    assert.equal(on.statusCode, 200);
    const recovery = [...on.body.matchAll(/<li><code>([a-z2-7-]+)<\/code><\/li>/g)].map((m) => m[1]!);
    assert.equal(recovery.length, 10);
    assert.equal(new Set(recovery).size, 10);
    const stored = await h.ctx.store.db.selectFrom('recovery_codes').selectAll().where('subject_id', '=', row.id).execute();
    assert.equal(stored.length, 10);
    for (const r of stored) assert.ok(!recovery.some((c) => r.code_digest.includes(c) || r.code_digest.includes(c.replace(/-/g, ''))), 'only digests are kept');
    const again = await client.get('/dashboard/settings/security');
    assert.match(again.body, /id="two-factor-on"/);
    assert.doesNotMatch(again.body, /id="recovery-codes"/, 'the codes are not shown again');

    const [enabled] = await auditRecords(h, 'member.two_factor_enabled');
    assert.equal(enabled?.actor_email, 'ann@example.com');
    assert.equal(enabled.ip, '127.0.0.1');
    assert.deepEqual([enabled.target_type, enabled.target_id, enabled.account_id], ['member', row.id, row.account_id]);
    assert.deepEqual(enabled.changes, { two_factor: [false, true] });

    // New recovery codes take a valid code, replace every old one, and are recorded without them.
    h.clock.advance(STEP);
    assert.equal((await client.post('/dashboard/settings/security/recovery-codes', { code: wrong }, again.body)).statusCode, 401);
    const renewed = await client.post('/dashboard/settings/security/recovery-codes', { code: totpCodeAt(secret, h.clock.now()) }, again.body);
    assert.equal(renewed.statusCode, 200, renewed.body);
    const fresh = [...renewed.body.matchAll(/<li><code>([a-z2-7-]+)<\/code><\/li>/g)].map((m) => m[1]!);
    assert.equal(fresh.length, 10);
    assert.ok(!fresh.some((c) => recovery.includes(c)));
    const digests = await h.ctx.store.db.selectFrom('recovery_codes').select('code_digest').where('subject_id', '=', row.id).execute();
    assert.ok(!digests.some((d) => stored.some((old) => old.code_digest === d.code_digest)), 'the old codes are gone');
    const [renewal] = await auditRecords(h, 'member.recovery_codes_regenerated');
    assert.deepEqual([renewal?.actor_email, renewal?.target_id], ['ann@example.com', row.id]);
    const log = await wholeAuditLog(h);
    for (const secretThing of [secret, ...recovery, ...fresh, ...fresh.map((c) => c.replace(/-/g, ''))]) assert.ok(!log.includes(secretThing), 'no secret or code in the log');
  });

  test('sign-in asks for the code after the password; a time step is not accepted twice; one step either side is', async () => {
    const owner = await signUp(h, 'bob@example.com');
    const { secret } = await setUp(h, owner);
    // Two steps on: the step before is a fresh one, still inside the window.
    h.clock.advance(2 * STEP);

    const { client, res } = await logIn(h, 'bob@example.com');
    assert.equal(res.statusCode, 303);
    assert.equal(res.headers.location, '/dashboard/login/code');
    const blocked = await client.get('/dashboard/settings/api-keys');
    assert.equal(blocked.statusCode, 303, 'the password alone opens nothing but the code form');
    assert.equal(blocked.headers.location, '/dashboard/login/code');
    const pendingCookie = client.cookies.get('pigeon_session');

    const code = totpCodeAt(secret, h.clock.now() - STEP + 1); // the previous step's
    const ok = await codeStep(client, code);
    assert.equal(ok.statusCode, 303, ok.body);
    assert.equal(ok.headers.location, '/dashboard');
    assert.notEqual(client.cookies.get('pigeon_session'), pendingCookie, 'a new session after the code');
    assert.equal((await client.get('/dashboard/settings/api-keys')).statusCode, 200);

    // The same code (its step) again, in another sign-in within its window: refused.
    const second = await logIn(h, 'bob@example.com');
    const replay = await codeStep(second.client, code);
    assert.equal(replay.statusCode, 401);
    assert.match(replay.body, /wrong or was already used/);
    // A code two steps away: refused.
    assert.equal((await codeStep(second.client, totpCodeAt(secret, h.clock.now() + 2 * STEP))).statusCode, 401);
    // The current step: accepted.
    assert.equal((await codeStep(second.client, totpCodeAt(secret, h.clock.now()))).statusCode, 303);
  });

  test('a recovery code signs in once', async () => {
    const owner = await signUp(h, 'cy@example.com');
    const { recovery } = await setUp(h, owner);
    const first = await logIn(h, 'cy@example.com');
    assert.equal((await codeStep(first.client, recovery[3]!.toUpperCase())).statusCode, 303, 'case does not matter');
    const second = await logIn(h, 'cy@example.com');
    assert.equal((await codeStep(second.client, recovery[3]!)).statusCode, 401, 'used up');
    assert.equal((await codeStep(second.client, recovery[4]!.replace(/-/g, ''))).statusCode, 303);
    const used = await auditRecords(h, 'member.recovery_code_used');
    assert.deepEqual(
      used.map((e) => [e.actor_email, e.ip, e.changes.unused]),
      [
        ['cy@example.com', '127.0.0.1', [null, 9]],
        ['cy@example.com', '127.0.0.1', [null, 8]],
      ],
    );
    const log = await wholeAuditLog(h);
    assert.ok(!recovery.some((c) => log.includes(c) || log.includes(c.replace(/-/g, ''))), 'no recovery code in the log');
  });

  test('wrong codes count toward the login lockout, which then refuses the password too', async () => {
    const owner = await signUp(h, 'dee@example.com');
    const { secret } = await setUp(h, owner);
    h.clock.advance(STEP);
    const { client } = await logIn(h, 'dee@example.com');
    const form = await client.get('/dashboard/login/code');
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await client.post('/dashboard/login/code', { code: '000000' }, form.body)).statusCode);
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
    const locked = await client.post('/dashboard/login/code', { code: totpCodeAt(secret, h.clock.now()) }, form.body);
    assert.equal(locked.statusCode, 429, 'even the right code waits out the lockout');
    assert.ok(Number(locked.headers['retry-after']) > 0);
    assert.equal((await logIn(h, 'dee@example.com')).res.statusCode, 429);
  });

  test('turning two-factor off takes a valid code', async () => {
    const owner = await signUp(h, 'eve@example.com');
    const { secret } = await setUp(h, owner);
    h.clock.advance(STEP);
    const page = await owner.get('/dashboard/settings/security');
    assert.equal((await owner.post('/dashboard/settings/security/disable', { code: '123456' }, page.body)).statusCode, 401);
    const off = await owner.post('/dashboard/settings/security/disable', { code: totpCodeAt(secret, h.clock.now()) }, page.body);
    assert.equal(off.statusCode, 200);
    assert.match(off.body, /id="two-factor-off"/);
    assert.equal((await logIn(h, 'eve@example.com')).res.headers.location, '/dashboard', 'no code asked any more');
    const [disabled] = await auditRecords(h, 'member.two_factor_disabled');
    assert.equal(disabled?.actor_email, 'eve@example.com');
    assert.deepEqual(disabled.changes, { two_factor: [true, false] });
  });

  test('an owner requires two-factor of every member: a member without it sets it up first; an owner resets a member', async () => {
    const owner = await signUp(h, 'fay@example.com');
    const { secret: ownerSecret } = await setUp(h, owner);
    // Invite a developer.
    let team = await owner.get('/dashboard/settings/team');
    await owner.post('/dashboard/settings/team/invite', { email: 'gus@example.com', role: 'developer' }, team.body);
    const mail = await h.ctx.store.db.selectFrom('mail_outbox').selectAll().where('to_address', '=', 'gus@example.com').executeTakeFirstOrThrow();
    const link = /https:\/\/pigeon\.test(\/dashboard\/invitation\?token=[A-Za-z0-9_-]+)/.exec(mail.body_text)![1]!;
    const member = new DashboardClient(h.app);
    const form = await member.get(link);
    const token = /name="token" value="([^"]+)"/.exec(form.body)![1]!;
    assert.equal((await member.post('/dashboard/invitation', { token, password: PASSWORD }, form.body)).statusCode, 303);
    assert.equal((await member.get('/dashboard/settings/api-keys')).statusCode, 200);

    team = await owner.get('/dashboard/settings/team');
    const required = await owner.post('/dashboard/settings/team/require-2fa', { required: 'on' }, team.body);
    assert.equal(required.statusCode, 200, 'the owner has two-factor: stays on the team page');
    assert.match(required.body, /Every member must sign in with two-factor/);

    const forced = await member.get('/dashboard/settings/api-keys');
    assert.equal(forced.statusCode, 303);
    assert.equal(forced.headers.location, '/dashboard/settings/security');
    const security = await member.get('/dashboard/settings/security');
    assert.equal(security.statusCode, 200);
    assert.match(security.body, /id="two-factor-required"/);
    const { secret } = await setUp(h, member);
    assert.equal((await member.get('/dashboard/settings/api-keys')).statusCode, 200, 'set up: in');
    const noOff = await member.get('/dashboard/settings/security');
    assert.doesNotMatch(noOff.body, /Turn two-factor off/, 'it cannot be turned off while required');
    h.clock.advance(STEP);
    assert.equal((await member.post('/dashboard/settings/security/disable', { code: totpCodeAt(secret, h.clock.now()) }, noOff.body)).statusCode, 400);

    // The owner resets the member's two-factor (a lost phone): their sessions end; they set it up again.
    const gus = await h.ctx.store.db.selectFrom('owners').selectAll().where('email', '=', 'gus@example.com').executeTakeFirstOrThrow();
    team = await owner.get('/dashboard/settings/team');
    assert.equal((await owner.post(`/dashboard/settings/team/${gus.id}/reset-2fa`, {}, team.body)).statusCode, 200);
    assert.equal((await member.get('/dashboard/settings/api-keys')).headers.location, '/dashboard/login');
    const again = await logIn(h, 'gus@example.com');
    assert.equal(again.res.headers.location, '/dashboard', 'no code: two-factor was reset');
    assert.equal((await again.client.get('/dashboard/settings/api-keys')).headers.location, '/dashboard/settings/security');
    void ownerSecret;

    const fay = await h.ctx.store.db.selectFrom('owners').selectAll().where('email', '=', 'fay@example.com').executeTakeFirstOrThrow();
    const [requirement] = await auditRecords(h, 'account.two_factor_requirement_changed');
    assert.deepEqual([requirement?.actor_email, requirement?.target_id, requirement?.account_id], ['fay@example.com', fay.account_id, fay.account_id]);
    assert.deepEqual(requirement!.changes, { require_2fa: [false, true] });
    const [reset] = await auditRecords(h, 'member.two_factor_reset');
    assert.deepEqual([reset?.actor_type, reset?.actor_email, reset?.target_type, reset?.target_id], ['member', 'fay@example.com', 'member', gus.id]);
    assert.deepEqual(reset!.changes, { two_factor: [true, false] });
    assert.ok(!(await wholeAuditLog(h)).includes(secret), "no member's secret in the log");
  });

  test('pigeon operator reset-2fa EMAIL turns the operator\'s two-factor off and ends their sessions', async () => {
    const ops = await signedInOperator(h.app, h.ctx, 'root@example.com');
    assert.equal((await ops.get('/operator/sender-ids')).statusCode, 200);
    await h.ctx.store.db.updateTable('operators').set({ totp_secret: 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ', totp_enabled_at: h.clock.now(), totp_last_step: 1 }).where('email', '=', 'root@example.com').execute();
    const printed: object[] = [];
    // As the command line runs it (src/cli/main.ts): acting as the machine's user.
    await operatorCommands['operator reset-2fa']!.run(actingAs(h.ctx, cliActor()), { positionals: ['Root@example.com'], values: {} }, { json: true, print: (r: object) => void printed.push(r) });
    assert.equal((printed[0] as { email: string }).email, 'root@example.com');
    const row = await h.ctx.store.db.selectFrom('operators').selectAll().where('email', '=', 'root@example.com').executeTakeFirstOrThrow();
    assert.equal(row.totp_secret, null);
    assert.equal(row.totp_enabled_at, null);
    assert.equal((await ops.get('/operator/sender-ids')).headers.location, '/operator/login', 'their session ended');
    const [reset] = await auditRecords(h, 'operator.two_factor_reset');
    assert.deepEqual([reset?.actor_type, reset?.account_id, reset?.target_type, reset?.target_id], ['cli', null, 'operator', row.id]);
    assert.deepEqual(reset!.changes, { two_factor: [true, false] });
    await assert.rejects(operatorCommands['operator reset-2fa']!.run(h.ctx, { positionals: ['nobody@example.com'], values: {} }, { json: true, print: () => {} }), /No operator nobody@example\.com/);
  });
});

describe('operator two-factor with OPERATOR_REQUIRE_2FA=true', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ OPERATOR_REQUIRE_2FA: 'true' });
  });
  after(() => h.close());

  test('an operator without it sets it up before any console page; sign-in then asks for the code', async () => {
    const ops = await signedInOperator(h.app, h.ctx, 'root@example.com');
    const forced = await ops.get('/operator/sender-ids');
    assert.equal(forced.statusCode, 303);
    assert.equal(forced.headers.location, '/operator/security');
    const off = await ops.get('/operator/security');
    assert.match(off.body, /id="two-factor-required"/);
    assert.equal((await ops.post('/operator/security/start', {}, off.body)).statusCode, 303);
    const shown = await ops.get('/operator/security');
    const secret = /id="totp-secret">([A-Z2-7]+)</.exec(shown.body)![1]!;
    const on = await ops.post('/operator/security/confirm', { code: totpCodeAt(secret, h.clock.now()) }, shown.body);
    assert.equal(on.statusCode, 200, on.body);
    assert.equal([...on.body.matchAll(/<li><code>/g)].length, 10);
    assert.equal((await ops.get('/operator/sender-ids')).statusCode, 200);
    const [enabled] = await auditRecords(h, 'operator.two_factor_enabled');
    assert.deepEqual([enabled?.actor_type, enabled?.actor_email, enabled?.target_type, enabled?.ip], ['operator', 'root@example.com', 'operator', '127.0.0.1']);

    h.clock.advance(STEP);
    const again = new DashboardClient(h.app);
    const form = await again.get('/operator/login');
    const res = await again.post('/operator/login', { email: 'root@example.com', password: 'operator password' }, form.body);
    assert.equal(res.headers.location, '/operator/login/code');
    assert.equal((await again.get('/operator/sender-ids')).headers.location, '/operator/login/code');
    const codeForm = await again.get('/operator/login/code');
    assert.equal((await again.post('/operator/login/code', { code: '000000' }, codeForm.body)).statusCode, 401);
    const ok = await again.post('/operator/login/code', { code: totpCodeAt(secret, h.clock.now()) }, codeForm.body);
    assert.equal(ok.statusCode, 303);
    assert.equal((await again.get('/operator/sender-ids')).statusCode, 200);

    // New recovery codes from the console, with a code of the next step; recorded without them.
    h.clock.advance(STEP);
    const security = await again.get('/operator/security');
    const renewed = await again.post('/operator/security/recovery-codes', { code: totpCodeAt(secret, h.clock.now()) }, security.body);
    assert.equal(renewed.statusCode, 200, renewed.body);
    const fresh = [...renewed.body.matchAll(/<li><code>([a-z2-7-]+)<\/code><\/li>/g)].map((m) => m[1]!);
    assert.equal(fresh.length, 10);
    const [renewal] = await auditRecords(h, 'operator.recovery_codes_regenerated');
    assert.equal(renewal?.actor_email, 'root@example.com');
    const log = await wholeAuditLog(h);
    assert.ok(![secret, ...fresh].some((c) => log.includes(c)), 'no secret or code in the log');
  });
});
