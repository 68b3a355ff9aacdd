/**
 * Teams and two-factor sign-in in a real browser (Debian's chromium, headless, playwright-core)
 * against `pigeon serve` on 127.0.0.1, with codes computed by the test from the secret the page
 * shows: an owner signs up, sets up two-factor and signs in with a code, then with a recovery
 * code; a viewer joins by the e-mailed invitation, has no button that changes anything and is
 * refused the POST it forges, and is signed out by the next click once removed; an operator, with
 * OPERATOR_REQUIRE_2FA on, is taken to the set-up before any console page. Screenshots go to
 * test-results/teams/.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import SqliteDatabase from '../../src/store/sqlite-driver.mjs';
import { totpCodeAt } from '../../src/services/auth/totp.ts';
import { logIn, openPage, signUp, startBrowserStack, type BrowserStack } from '../helpers/browser.ts';

const SHOTS = 'test-results/teams';
const STEP = 30_000;
const OPERATOR = { email: 'root@pigeon.test', password: 'a long operator password' };
const OWNER = { name: 'Team Ltd', email: 'owner@team.test', password: 'a long owner password' };
const VIEWER = { email: 'viewer@team.test', password: 'a long viewer password' };

describe('teams and two-factor in a browser', () => {
  let stack: BrowserStack;
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-e2e-teams-'));
  const database = join(dir, 'pigeon.db');
  /** The owner's recovery codes, from the set-up in the first test. */
  let ownerRecovery: string[] = [];

  before(async () => {
    stack = await startBrowserStack({ shots: SHOTS, operator: OPERATOR, env: { DATABASE_URL: `sqlite:${database}`, OPERATOR_REQUIRE_2FA: 'true' } });
  });
  after(async () => {
    await stack?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Turns two-factor on from the security page the browser is on; the secret and the recovery codes. */
  async function setUpTwoFactor(page: Page): Promise<{ secret: string; recovery: string[] }> {
    await page.getByRole('button', { name: 'Set up two-factor' }).click();
    await page.locator('#totp-qr svg').waitFor();
    const secret = (await page.locator('#totp-secret').textContent())!.trim();
    await page.getByLabel('Code', { exact: true }).fill(totpCodeAt(secret, Date.now()));
    await page.getByRole('button', { name: 'Turn two-factor on' }).click();
    await page.locator('#recovery-codes').waitFor();
    const recovery = (await page.locator('#recovery-codes li code').allTextContents()).map((c) => c.trim());
    assert.equal(recovery.length, 10);
    return { secret, recovery };
  }

  /** The sign-in code step: the page must be on it. */
  async function enterCode(page: Page, code: string): Promise<void> {
    await page.getByLabel(/^Code from your authenticator app/).fill(code);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  test('an owner sets up two-factor, then signs in with a code and with a recovery code', async () => {
    const { base } = stack;
    const { page } = await openPage(stack.browser, { viewport: { width: 1280, height: 800 } });
    await page.goto(`${base}/dashboard/signup`);
    await signUp(page, base, OWNER);
    await page.goto(`${base}/dashboard/settings/security`);
    const { secret, recovery } = await setUpTwoFactor(page);
    ownerRecovery = recovery;
    await page.screenshot({ path: `${SHOTS}/recovery-codes.png`, fullPage: true });

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.goto(`${base}/dashboard/login`);
    await logIn(page, OWNER);
    await page.waitForURL(`${base}/dashboard/login/code`);
    // The password alone opens nothing else.
    await page.goto(`${base}/dashboard/settings/api-keys`);
    await page.waitForURL(`${base}/dashboard/login/code`);
    // The set-up used the current time step, which is never accepted twice: the next one is.
    await enterCode(page, totpCodeAt(secret, Date.now() + STEP));
    await page.waitForURL(`${base}/dashboard`);

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.goto(`${base}/dashboard/login`);
    await logIn(page, OWNER);
    await page.waitForURL(`${base}/dashboard/login/code`);
    await enterCode(page, recovery[0]!);
    await page.waitForURL(`${base}/dashboard`);
    await page.goto(`${base}/dashboard/settings/security`);
    await page.locator('#two-factor-on').getByText('Recovery codes left: 9').waitFor();
    await page.context().close();
  });

  test('an invited viewer joins, is refused a change even by a forged POST, and is signed out once removed', async () => {
    const { base, cli } = stack;
    const owner = await openPage(stack.browser, { viewport: { width: 1280, height: 800 } });
    await owner.page.goto(`${base}/dashboard/login`);
    await logIn(owner.page, OWNER);
    await owner.page.waitForURL(`${base}/dashboard/login/code`);
    // Both time steps around now were used by the first test: a recovery code this time.
    await enterCode(owner.page, ownerRecovery[1]!);
    await owner.page.waitForURL(`${base}/dashboard`);

    await owner.page.goto(`${base}/dashboard/settings/team`);
    await owner.page.locator('#invite-email').fill(VIEWER.email);
    await owner.page.locator('#invite-role').selectOption('viewer');
    await owner.page.getByRole('button', { name: 'Send the invitation' }).click();
    await owner.page.getByRole('cell', { name: VIEWER.email, exact: true }).waitFor();

    const link = invitationLink(VIEWER.email);
    const viewer = await openPage(stack.browser, { viewport: { width: 390, height: 844 } });
    await viewer.page.goto(link);
    await viewer.page.getByLabel('Choose a password').fill(VIEWER.password);
    await viewer.page.getByRole('button', { name: 'Join' }).click();
    await viewer.page.waitForURL(`${base}/dashboard`);

    await viewer.page.goto(`${base}/dashboard/settings/api-keys`);
    await viewer.page.locator('#role-hint').waitFor();
    assert.equal(await viewer.page.getByRole('button', { name: 'Generate New Key' }).count(), 0, 'no button to make a key');
    await viewer.page.screenshot({ path: `${SHOTS}/viewer-keys.png`, fullPage: true });
    // The form the page does not show, posted by hand with the session's own CSRF token.
    const csrf = await viewer.page.locator('input[name="_csrf"]').first().getAttribute('value');
    const forged = await viewer.page.request.post(`${base}/dashboard/settings/api-keys`, { form: { _csrf: csrf!, label: 'forged' }, maxRedirects: 0 });
    assert.equal(forged.status(), 403);
    const accountId = cli<{ data: { id: string }[] }>('account', 'list', '--email', OWNER.email).data[0]!.id;
    assert.deepEqual(cli<{ data: unknown[] }>('key', 'list', accountId).data, [], 'no key was made');

    // Removed by the owner while signed in: the viewer's next click lands on the sign-in page.
    await owner.page.goto(`${base}/dashboard/settings/team`);
    await owner.page.getByRole('button', { name: `Remove ${VIEWER.email}` }).click();
    await owner.page.getByRole('cell', { name: VIEWER.email, exact: true }).waitFor({ state: 'detached' });
    await viewer.page.getByRole('link', { name: 'Messages' }).first().click();
    await viewer.page.waitForURL(`${base}/dashboard/login`);
    await owner.context.close();
    await viewer.context.close();

  });

  test('an operator required to use two-factor sets it up before any console page', async () => {
    const { base } = stack;
    const { page, context } = await openPage(stack.browser, { viewport: { width: 1280, height: 800 } });
    await page.goto(`${base}/operator/login`);
    await logIn(page, OPERATOR);
    await page.goto(`${base}/operator/sender-ids`);
    await page.waitForURL(`${base}/operator/security`);
    await page.locator('#two-factor-required').waitFor();
    await page.screenshot({ path: `${SHOTS}/operator-required.png`, fullPage: true });
    const { secret } = await setUpTwoFactor(page);
    await page.goto(`${base}/operator/sender-ids`);
    await page.locator('#queue-total').waitFor();

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.goto(`${base}/operator/login`);
    await logIn(page, OPERATOR);
    await page.waitForURL(`${base}/operator/login/code`);
    await enterCode(page, totpCodeAt(secret, Date.now() + STEP));
    await page.waitForURL(/\/operator(\/|$)/);
    await page.goto(`${base}/operator/sender-ids`);
    await page.locator('#queue-total').waitFor();
    await context.close();
  });

  /** The invitation link of the last mail to `to`, from the outbox (no SMTP server here). */
  function invitationLink(to: string): string {
    const db = new SqliteDatabase(database, { readonly: true });
    try {
      const mail = db.prepare('select body_text from mail_outbox where to_address = ? order by created_at desc, id desc limit 1').get(to) as { body_text: string } | undefined;
      const m = /(http:\/\/127\.0\.0\.1:\d+\/dashboard\/invitation\?token=[A-Za-z0-9_-]+)/.exec(mail?.body_text ?? '');
      assert.ok(m, `an invitation mail to ${to}: ${mail?.body_text}`);
      return m[1]!;
    }
    finally {
      db.close();
    }
  }
});
