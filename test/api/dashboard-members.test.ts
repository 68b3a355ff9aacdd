/**
 * Members of an account through HTTP (Fastify inject): invitations by e-mail (one use, 7 days),
 * roles enforced on every dashboard route from the one table, role changes and removal (at least
 * one owner kept, a removed person's sessions ending at once), and `pigeon member list`; each
 * change and each refusal recorded in the audit log.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Fastify, { type RouteOptions } from 'fastify';
import { harness, type Harness } from '../helpers/harness.ts';
import { csrfToken, DashboardClient, dashboardLogIn, signedUpOwner } from '../helpers/dashboard-client.ts';
import { DASHBOARD_REQUIREMENTS, requirementOf, requirementOfPath, roleMeets } from '../../src/domain/member-roles.ts';
import { dashboardRoutes } from '../../src/http/dashboard/dashboard-routes.ts';
import { MAX_PENDING_INVITATIONS } from '../../src/services/accounts/members.ts';
import { memberCommands } from '../../src/cli/commands/member.ts';
import { auditRecords, wholeAuditLog } from '../helpers/audit.ts';
import { MAX_REFUSALS_RECORDED_PER_HOUR, recordAudit } from '../../src/services/audit/audit.ts';

const PASSWORD = 'correct horse battery';

const signUp = (h: Harness, email: string) => signedUpOwner(h.app, email, PASSWORD);
const logIn = (h: Harness, email: string, password = PASSWORD) => dashboardLogIn(h.app, email, password);

async function person(h: Harness, email: string) {
  return h.ctx.store.db.selectFrom('owners').selectAll().where('email', '=', email).executeTakeFirstOrThrow();
}

async function invitationLink(h: Harness, to: string): Promise<string> {
  const mails = await h.ctx.store.db.selectFrom('mail_outbox').selectAll().where('to_address', '=', to).orderBy('created_at').orderBy('id').execute();
  const last = mails.at(-1);
  assert.ok(last, `a mail to ${to}`);
  const m = /https:\/\/pigeon\.test(\/dashboard\/invitation\?token=[A-Za-z0-9_-]+)/.exec(last.body_text);
  assert.ok(m, `an invitation link in: ${last.body_text}`);
  return m[1]!;
}

async function invite(owner: DashboardClient, email: string, role: string) {
  const team = await owner.get('/dashboard/settings/team');
  return owner.post('/dashboard/settings/team/invite', { email, role }, team.body);
}

/** Invites `email` with `role` and accepts the invitation: the new member's signed-in client. */
async function join(h: Harness, owner: DashboardClient, email: string, role: string): Promise<DashboardClient> {
  const res = await invite(owner, email, role);
  assert.equal(res.statusCode, 200, res.body);
  const member = new DashboardClient(h.app);
  const form = await member.get(await invitationLink(h, email));
  assert.equal(form.statusCode, 200, form.body);
  assert.match(form.body, new RegExp(`as <strong>${role}</strong>`));
  const token = /name="token" value="([^"]+)"/.exec(form.body)![1]!;
  const joined = await member.post('/dashboard/invitation', { token, password: PASSWORD }, form.body);
  assert.equal(joined.statusCode, 303, joined.body);
  assert.equal(joined.headers.location, '/dashboard');
  return member;
}

describe('dashboard members: the role table', () => {
  test('every registered dashboard route of the owner area has a declared requirement, and every declared one is registered', async () => {
    const h = await harness();
    try {
      const routes: RouteOptions[] = [];
      const app = Fastify();
      app.addHook('onRoute', (route) => void routes.push(route));
      await app.register(dashboardRoutes(h.ctx));
      await app.ready();
      const owner = routes.filter((r) => r.url.startsWith('/dashboard') && !r.url.startsWith('/dashboard/assets/'));
      assert.ok(owner.length > 50, `${owner.length} routes`);
      const seen = new Set<string>();
      for (const r of owner) {
        const path = r.url.slice('/dashboard'.length) || '/';
        for (const method of Array.isArray(r.method) ? r.method : [r.method]) {
          const requirement = requirementOf(method, path);
          assert.ok(requirement, `${method} ${path} has a requirement`);
          assert.equal(r.config?.requirement, requirement, `${method} ${path} carries it`);
          assert.equal(r.config?.public === true, requirement === 'public', `${method} ${path}: public exactly when the table says so`);
          seen.add(`${method === 'HEAD' ? 'GET' : method} ${path}`);
        }
      }
      const unregistered = Object.keys(DASHBOARD_REQUIREMENTS).filter((k) => !seen.has(k));
      assert.deepEqual(unregistered, [], 'the table names no route that does not exist');
      await app.close();
    } finally {
      await h.close();
    }
  });
});

describe('dashboard members: invitations, roles and removal', () => {
  let h: Harness;
  let owner: DashboardClient;
  before(async () => {
    h = await harness();
    owner = await signUp(h, 'boss@example.com');
  });
  after(() => h.close());

  test('the person who signed up is the owner; an invitation joins a member with the invited role, once', async () => {
    assert.equal((await person(h, 'boss@example.com')).role, 'owner');
    const dev = await join(h, owner, 'dev@example.com', 'developer');
    const devRow = await person(h, 'dev@example.com');
    assert.equal(devRow.role, 'developer');
    assert.equal(devRow.account_id, (await person(h, 'boss@example.com')).account_id);
    assert.notEqual(devRow.email_verified_at, null, 'following the mailed link confirms the address');
    assert.equal((await dev.get('/dashboard')).statusCode, 200);

    const team = await owner.get('/dashboard/settings/team');
    assert.match(team.body, /dev@example\.com/);
    assert.doesNotMatch(team.body, /Invitations waiting<\/caption>/, 'the accepted invitation is no longer waiting');

    // The link is used up.
    const again = new DashboardClient(h.app);
    const mailLink = await invitationLink(h, 'dev@example.com');
    assert.equal((await again.get(mailLink)).statusCode, 400);

    // Recorded: the owner's invitation, and the acceptance as the person who joined; never the link's token.
    const boss = await person(h, 'boss@example.com');
    const [sent] = await auditRecords(h, 'invitation.sent');
    assert.deepEqual([sent?.actor_type, sent?.actor_email, sent?.account_id, sent?.target_type, sent?.ip], ['member', 'boss@example.com', boss.account_id, 'invitation', '127.0.0.1']);
    assert.deepEqual(sent!.changes, { email: [null, 'dev@example.com'], role: [null, 'developer'] });
    const [accepted] = await auditRecords(h, 'invitation.accepted');
    assert.deepEqual([accepted?.actor_type, accepted?.actor_id, accepted?.actor_email, accepted?.target_id], ['member', devRow.id, 'dev@example.com', sent!.target_id]);
    assert.deepEqual(accepted!.changes.role, [null, 'developer']);
    const token = /token=([A-Za-z0-9_-]+)/.exec(mailLink)![1]!;
    assert.ok(!(await wholeAuditLog(h)).includes(token), "the invitation's token is not recorded");
  });

  test('an owner withdraws an invitation: its link stops working, and it is recorded', async () => {
    assert.equal((await invite(owner, 'maybe@example.com', 'billing')).statusCode, 200);
    const link = await invitationLink(h, 'maybe@example.com');
    const invitation = await h.ctx.store.db.selectFrom('member_invitations').selectAll().where('email', '=', 'maybe@example.com').executeTakeFirstOrThrow();
    const team = await owner.get('/dashboard/settings/team');
    const withdrawn = await owner.post(`/dashboard/settings/team/invitations/${invitation.id}/revoke`, {}, team.body);
    assert.equal(withdrawn.statusCode, 200, withdrawn.body);
    assert.equal((await new DashboardClient(h.app).get(link)).statusCode, 400);
    assert.equal((await owner.post(`/dashboard/settings/team/invitations/${invitation.id}/revoke`, {}, team.body)).statusCode, 404, 'not twice');
    const revoked = await auditRecords(h, 'invitation.revoked');
    assert.deepEqual(
      revoked.map((e) => [e.actor_email, e.target_id, e.changes.email]),
      [['boss@example.com', invitation.id, ['maybe@example.com', null]]],
    );
  });

  test('an invitation expires after 7 days, and a newer one replaces an older one', async () => {
    assert.equal((await invite(owner, 'late@example.com', 'viewer')).statusCode, 200);
    const first = await invitationLink(h, 'late@example.com');
    assert.equal((await invite(owner, 'late@example.com', 'billing')).statusCode, 200);
    const second = await invitationLink(h, 'late@example.com');
    const visitor = new DashboardClient(h.app);
    assert.equal((await visitor.get(first)).statusCode, 400, 'the older link is void');
    assert.equal((await visitor.get(second)).statusCode, 200);
    h.clock.advance(7 * 24 * 60 * 60 * 1000 + 1);
    const dead = await visitor.get(second);
    assert.equal(dead.statusCode, 400);
    assert.match(dead.body, /expired/);
    // The owner's session went idle meanwhile.
    owner = (await logIn(h, 'boss@example.com')).client;
  });

  test('invitations are refused for a taken address, a bad role, and beyond the bound of waiting ones', async () => {
    const taken = await invite(owner, 'boss@example.com', 'viewer');
    assert.equal(taken.statusCode, 400);
    assert.match(taken.body, /already signs in/);
    const badRole = await invite(owner, 'x@example.com', 'admin');
    assert.equal(badRole.statusCode, 400);
    assert.match(badRole.body, /Choose a role/);

    const other = await signUp(h, 'many@example.com');
    for (let i = 0; i < MAX_PENDING_INVITATIONS; i++) assert.equal((await invite(other, `p${i}@example.com`, 'viewer')).statusCode, 200);
    const over = await invite(other, 'one-more@example.com', 'viewer');
    assert.equal(over.statusCode, 422);
    assert.match(over.body, /at most 50 invitations/);
    const mails = await h.ctx.store.db.selectFrom('mail_outbox').select('id').where('to_address', '=', 'one-more@example.com').execute();
    assert.equal(mails.length, 0, 'nothing mailed beyond the bound');
  });

  test('roles: viewers read but every change is refused, even a forged POST with a valid form token', async () => {
    const viewer = await join(h, owner, 'viewer@example.com', 'viewer');
    for (const url of ['/dashboard', '/dashboard/settings/api-keys', '/dashboard/messages', '/dashboard/credits', '/dashboard/usage', '/dashboard/settings/team', '/dashboard/sender-ids']) {
      assert.equal((await viewer.get(url)).statusCode, 200, url);
    }
    // Every page a viewer reads shows no form that only a refusal could answer.
    const readable = Object.entries(DASHBOARD_REQUIREMENTS)
      .filter(([k, r]) => k.startsWith('GET ') && !k.includes(':') && (r === 'read' || r === 'self'))
      .map(([k]) => `/dashboard${k.slice(4) === '/' ? '' : k.slice(4)}`);
    assert.ok(readable.length > 15);
    let hints = 0;
    for (const url of readable) {
      const res = await viewer.get(url);
      if (res.statusCode !== 200) continue;
      if (res.body.includes('id="role-hint"')) hints++;
      for (const [, action] of res.body.matchAll(/<form\b[^>]*\bmethod="post"[^>]*\baction="\/dashboard([^"?#]*)/g)) {
        const requirement = requirementOfPath('POST', action!);
        assert.ok(requirement !== undefined && roleMeets('viewer', requirement), `${url} shows a viewer a form to POST ${action} (${requirement})`);
      }
    }
    assert.ok(hints >= 3, `pages say why their forms are missing (${hints})`);
    assert.match((await owner.get('/dashboard/settings/api-keys')).body, /Generate New Key<\/button>/, 'an owner still has the form');
    const page = await viewer.get('/dashboard/settings/team');
    const csrf = csrfToken(page.body);
    const changes = Object.entries(DASHBOARD_REQUIREMENTS).filter(([k, r]) => k.startsWith('POST ') && (r === 'developer' || r === 'billing' || r === 'owner'));
    assert.ok(changes.length > 20);
    const keysBefore = await h.ctx.store.db.selectFrom('api_keys').select('id').execute();
    for (const [key] of changes) {
      const [method, path] = key.split(' ') as [string, string];
      assert.equal(method, 'POST');
      const url = `/dashboard${path.replace(/:[a-z]+/g, 'x')}`;
      const res = await viewer.post(url, { _csrf: csrf, label: 'forged', scopes: 'sms:send', email: 'forged@example.com', role: 'owner', name: 'Forged' });
      assert.equal(res.statusCode, 403, `${key}: ${res.body.slice(0, 200)}`);
      assert.match(res.body, /Your role \(viewer\) does not allow this/);
    }
    assert.deepEqual(await h.ctx.store.db.selectFrom('api_keys').select('id').execute(), keysBefore, 'no key was made');
    assert.equal((await person(h, 'viewer@example.com')).role, 'viewer');
    assert.equal((await h.ctx.store.db.selectFrom('member_invitations').select('id').where('email', '=', 'forged@example.com').execute()).length, 0);
    // Each refusal is recorded, with the member, the route and the role; nothing else was.
    const viewerRow = await person(h, 'viewer@example.com');
    const refused = (await auditRecords(h, 'member.access_denied')).filter((e) => e.actor_id === viewerRow.id);
    assert.deepEqual(refused.map((e) => e.target_id).sort(), changes.map(([key]) => `POST /dashboard${key.slice('POST '.length)}`).sort());
    assert.ok(refused.every((e) => e.actor_email === 'viewer@example.com' && e.account_id === viewerRow.account_id && e.target_type === 'route' && e.ip === '127.0.0.1'));
    assert.deepEqual(refused.find((e) => e.target_id === 'POST /dashboard/settings/team/invite')!.changes, { role: [null, 'viewer'], needed: [null, 'owner'] });
    assert.equal((await auditRecords(h, 'invitation.sent')).filter((e) => e.actor_id === viewerRow.id).length, 0);

    // Refusals recorded are bounded per account and hour: beyond the bound they are still refused.
    const room = MAX_REFUSALS_RECORDED_PER_HOUR - (await auditRecords(h, 'member.access_denied')).filter((e) => e.account_id === viewerRow.account_id).length;
    for (let i = 0; i < room; i++) await recordAudit(h.ctx, { action: 'member.access_denied', accountId: viewerRow.account_id, target: { type: 'route', id: 'POST /dashboard/x' } });
    const denied = async () => (await auditRecords(h, 'member.access_denied')).filter((e) => e.account_id === viewerRow.account_id).length;
    assert.equal(await denied(), MAX_REFUSALS_RECORDED_PER_HOUR);
    assert.equal((await viewer.post('/dashboard/settings/team/invite', { _csrf: csrf, email: 'again@example.com', role: 'owner' })).statusCode, 403);
    assert.equal(await denied(), MAX_REFUSALS_RECORDED_PER_HOUR, 'not recorded beyond the bound');
    h.clock.advance(3_600_001);
    const later = await logIn(h, 'viewer@example.com');
    const laterCsrf = csrfToken((await later.client.get('/dashboard/settings/team')).body);
    assert.equal((await later.client.post('/dashboard/settings/team/invite', { _csrf: laterCsrf, email: 'again@example.com', role: 'owner' })).statusCode, 403);
    assert.equal(await denied(), MAX_REFUSALS_RECORDED_PER_HOUR + 1, 'an hour later, recorded again');
    owner = (await logIn(h, 'boss@example.com')).client;
  });

  test('roles: a developer manages keys but not the team; billing reads balance and usage but makes no keys', async () => {
    const dev = await logIn(h, 'dev@example.com');
    assert.equal(dev.res.statusCode, 303);
    const keys = await dev.client.get('/dashboard/settings/api-keys');
    const nonce = /name="nonce" value="([^"]+)"/.exec(keys.body)![1]!;
    const made = await dev.client.post('/dashboard/settings/api-keys', { label: 'ci', scopes: 'sms:send', nonce }, keys.body);
    assert.equal(made.statusCode, 200, made.body);
    assert.match(made.body, /id="new-key"/);
    const refused = await invite(dev.client, 'friend@example.com', 'owner');
    assert.equal(refused.statusCode, 403);
    assert.doesNotMatch((await dev.client.get('/dashboard/settings/team')).body, /Send the invitation/, 'the invite form is not offered');

    const billing = await join(h, owner, 'money@example.com', 'billing');
    assert.equal((await billing.get('/dashboard/credits')).statusCode, 200);
    assert.equal((await billing.get('/dashboard/usage.csv')).statusCode, 200);
    const billingKeys = await billing.get('/dashboard/settings/api-keys');
    const billingNonce = /name="nonce" value="([^"]+)"/.exec(billingKeys.body)?.[1] ?? 'x';
    assert.equal((await billing.post('/dashboard/settings/api-keys', { label: 'no', scopes: 'sms:send', nonce: billingNonce }, billingKeys.body)).statusCode, 403);
    assert.equal((await billing.post('/dashboard/settings/webhook/reveal', {}, billingKeys.body)).statusCode, 403, 'the webhook secret is not shown to billing');
  });

  test('an account keeps at least one owner; an owner changes roles', async () => {
    const solo = await signUp(h, 'solo@example.com');
    const me = await person(h, 'solo@example.com');
    const team = await solo.get('/dashboard/settings/team');
    const demote = await solo.post(`/dashboard/settings/team/${me.id}/role`, { role: 'viewer' }, team.body);
    assert.equal(demote.statusCode, 400);
    assert.match(demote.body, /keeps at least one owner/);
    const leave = await solo.post(`/dashboard/settings/team/${me.id}/remove`, {}, team.body);
    assert.equal(leave.statusCode, 400);
    assert.equal((await person(h, 'solo@example.com')).role, 'owner');

    await join(h, solo, 'second@example.com', 'viewer');
    const second = await person(h, 'second@example.com');
    const promote = await solo.post(`/dashboard/settings/team/${second.id}/role`, { role: 'owner' }, team.body);
    assert.equal(promote.statusCode, 200, promote.body);
    assert.equal((await person(h, 'second@example.com')).role, 'owner');
    const nowDemote = await solo.post(`/dashboard/settings/team/${me.id}/role`, { role: 'viewer' }, team.body);
    assert.equal(nowDemote.statusCode, 200);
    assert.equal((await person(h, 'solo@example.com')).role, 'viewer');
    assert.equal((await solo.post(`/dashboard/settings/team/${second.id}/role`, { role: 'viewer' }, team.body)).statusCode, 403, 'a viewer now');
    const roleChanges = (await auditRecords(h, 'member.role_changed')).filter((e) => e.account_id === me.account_id);
    assert.deepEqual(
      roleChanges.map((e) => [e.actor_email, e.target_id, e.changes.role]),
      [
        ['solo@example.com', second.id, ['viewer', 'owner']],
        ['solo@example.com', me.id, ['owner', 'viewer']],
      ],
      'the refused changes are not recorded as changes',
    );

    // Another account's member is out of reach.
    const bossTeam = await owner.get('/dashboard/settings/team');
    assert.equal((await owner.post(`/dashboard/settings/team/${second.id}/remove`, {}, bossTeam.body)).statusCode, 404);
    assert.equal((await owner.post(`/dashboard/settings/team/${second.id}/role`, { role: 'viewer' }, bossTeam.body)).statusCode, 404);
  });

  test("removing a member ends their sessions at once and they cannot log in again", async () => {
    const gone = await join(h, owner, 'gone@example.com', 'developer');
    const other = await logIn(h, 'gone@example.com');
    assert.equal(other.res.statusCode, 303);
    const row = await person(h, 'gone@example.com');
    const team = await owner.get('/dashboard/settings/team');
    const removed = await owner.post(`/dashboard/settings/team/${row.id}/remove`, {}, team.body);
    assert.equal(removed.statusCode, 200, removed.body);
    for (const client of [gone, other.client]) {
      const res = await client.get('/dashboard/settings/api-keys');
      assert.equal(res.statusCode, 303);
      assert.equal(res.headers.location, '/dashboard/login');
    }
    const sessions = await h.ctx.store.db.selectFrom('sessions').select('id').where('subject_id', '=', row.id).execute();
    assert.equal(sessions.length, 0);
    assert.equal((await logIn(h, 'gone@example.com')).res.statusCode, 401);
    const [removal] = await auditRecords(h, 'member.removed');
    assert.deepEqual([removal?.actor_email, removal?.target_type, removal?.target_id, removal?.account_id], ['boss@example.com', 'member', row.id, row.account_id]);
    assert.deepEqual(removal!.changes, { email: ['gone@example.com', null], role: ['developer', null] });
  });

  test('pigeon member list ACCOUNT_ID, and --json', async () => {
    const accountId = (await person(h, 'boss@example.com')).account_id;
    const printed: { result: object; text: string }[] = [];
    const out = { json: true, print: (result: object, text: string) => void printed.push({ result, text }) };
    await memberCommands['member list']!.run(h.ctx, { positionals: [accountId], values: {} }, out);
    const data = (printed[0]!.result as { data: { email: string; role: string; two_factor: boolean }[] }).data;
    const byEmail = Object.fromEntries(data.map((m) => [m.email, m.role]));
    assert.equal(byEmail['boss@example.com'], 'owner');
    assert.equal(byEmail['dev@example.com'], 'developer');
    assert.equal(byEmail['viewer@example.com'], 'viewer');
    assert.equal(byEmail['gone@example.com'], undefined);
    assert.equal(data[0]!.two_factor, false);
    assert.match(printed[0]!.text, /boss@example\.com\s+owner/);
    await assert.rejects(memberCommands['member list']!.run(h.ctx, { positionals: ['acc_missing'], values: {} }, out), /No account acc_missing/);
  });
});
