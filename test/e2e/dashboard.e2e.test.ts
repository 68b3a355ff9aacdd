/**
 * The dashboard in a real browser: Debian's chromium, headless, driven by playwright-core against
 * `pigeon serve` started as a child process on a free port with a throwaway SQLite file. One
 * story, in order: sign up, generate a key (shown once), use it, register Sender IDs with a
 * document, review them as the operator (approve; reject with a reason), read the outbox, top up,
 * send, find the message in Messages, revoke the key and see 401 `api_key_revoked`.
 * Screenshots of every page at desktop and phone width go to test-results/dashboard/.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { logIn, openPage, signUp, startBrowserStack, type BrowserStack } from '../helpers/browser.ts';
import { waitFor } from '../helpers/wait-for.ts';

const SHOTS = 'test-results/dashboard';
const VIEWPORTS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;
const OWNER = { name: 'Acme Trading', email: 'owner@acme.test', password: 'a long owner password' };
const OPERATOR = { email: 'ops@pigeon.test', password: 'a long operator password' };

/** Every form control has an accessible name: a <label for>, a wrapping label, aria-label or aria-labelledby. */
async function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll('input:not([type=hidden]), select, textarea, button')]
      .filter((el) => {
        const e = el as HTMLInputElement;
        if (e.getAttribute('aria-label') || e.getAttribute('aria-labelledby')) return false;
        if (e.tagName === 'BUTTON') return !(e.textContent ?? '').trim();
        return !(e.labels && e.labels.length > 0);
      })
      .map((e) => e.outerHTML.slice(0, 120)),
  );
}

describe('dashboard in a browser', () => {
  let stack: BrowserStack;
  let base: string;
  const shots: { area: 'owner' | 'operator'; name: string; url: string }[] = [];

  before(async () => {
    stack = await startBrowserStack({ shots: SHOTS, env: { SIM_DELIVERY_DELAY_MS: '50' }, operator: OPERATOR });
    base = stack.base;
  });

  after(() => stack?.close());

  /** Screenshots a page at both widths and checks its labels and that nothing overflows a phone. */
  async function capture(context: BrowserContext, name: string, url: string): Promise<void> {
    const page = await context.newPage();
    try {
      for (const [label, size] of Object.entries(VIEWPORTS)) {
        await page.setViewportSize(size);
        await page.goto(`${base}${url}`);
        await page.waitForLoadState('load');
        await page.screenshot({ path: `${SHOTS}/${name}-${label}.png`, fullPage: true });
        if (label === 'phone') {
          const width = await page.evaluate(() => document.documentElement.scrollWidth);
          assert.ok(width <= size.width + 1, `${url} is ${width}px wide on a ${size.width}px phone`);
        }
      }
      assert.deepEqual(await unlabelledControls(page), [], `${url} has controls without labels`);
    } finally {
      await page.close();
    }
  }

  test('owner and operator, start to finish', async () => {
    const { context: ownerContext, page } = await openPage(stack.browser, { viewport: VIEWPORTS.desktop });

    // Sign up.
    await page.goto(`${base}/dashboard/login`);
    await page.screenshot({ path: `${SHOTS}/login-desktop.png` });
    await page.getByRole('link', { name: 'Sign up' }).click();
    await signUp(page, base, OWNER);
    assert.equal(await page.locator('#balance').textContent(), '0');

    // Log out and in again.
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(`${base}/dashboard/login`);
    await logIn(page, OWNER);
    await page.waitForURL(`${base}/dashboard`);

    // Settings → API Keys → Generate New Key: the key is shown once.
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Label').fill('Production server');
    await page.getByRole('button', { name: 'Generate New Key' }).click();
    const key = ((await page.locator('#new-key').textContent()) ?? '').trim();
    assert.match(key, /^pk_live_[0-9A-Za-z]{32}$/);
    await page.screenshot({ path: `${SHOTS}/api-key-created-desktop.png`, fullPage: true });
    // Reloading the page that showed the key posts the form again: no second key, and no key shown.
    const reloaded = await page.reload();
    assert.equal(reloaded?.request().method(), 'POST', 'the reload re-posted the form');
    assert.equal(reloaded?.status(), 409);
    assert.equal(await page.locator('#new-key').count(), 0);
    await page.getByText('its key was shown once').waitFor();
    assert.equal(await page.locator('td[data-label="Label"]', { hasText: 'Production server' }).count(), 1, 'one key, not two');
    await page.goto(`${base}/dashboard/settings/api-keys`);
    const listed = await page.content();
    assert.ok(!listed.includes(key), 'the key is not shown again');
    assert.ok(listed.includes(`${key.slice(0, 12)}…`), 'its prefix is');

    const api = (method: string, path: string, body?: unknown) =>
      fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
    assert.equal((await api('GET', '/v1/account')).status, 200);

    // Sender IDs: the name rules are checked as you type; register with a document.
    await page.getByRole('link', { name: 'Sender IDs' }).click();
    const name = page.getByLabel('Name', { exact: true });
    await name.pressSequentially('Acme Shop');
    await page.locator('#name-check', { hasText: 'whitespace' }).waitFor();
    await name.fill('');
    await name.pressSequentially('AcmeShop');
    await page.locator('#name-check', { hasText: 'can be registered' }).waitFor();
    await page.getByLabel('Verification documents (optional)').setInputFiles({
      name: 'trade-register.pdf',
      mimeType: 'application/pdf',
      buffer: Buffer.from('%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n'),
    });
    await page.getByRole('button', { name: 'Register' }).click();
    await page.waitForURL(`${base}/dashboard/sender-ids`);
    await name.fill('TrustMeBnk');
    await page.getByRole('button', { name: 'Register' }).click();
    await page.waitForURL(`${base}/dashboard/sender-ids`);
    const acmeRow = page.locator('tr', { hasText: 'AcmeShop' });
    assert.equal(await acmeRow.locator('.badge').textContent(), 'Pending');
    assert.ok(await acmeRow.getByRole('link', { name: 'trade-register.pdf' }).isVisible());

    // The operator reviews: approve one, reject the other with a reason.
    const { context: opsContext, page: ops } = await openPage(stack.browser, { viewport: VIEWPORTS.desktop });
    await ops.goto(`${base}/operator`);
    await ops.waitForURL(`${base}/operator/login`);
    await logIn(ops, OPERATOR);
    await ops.waitForURL(`${base}/operator/sender-ids`);
    await capture(opsContext, 'operator-queue-pending', '/operator/sender-ids');
    const acmeCard = ops.locator('section.review', { hasText: 'AcmeShop' });
    assert.ok(await acmeCard.getByRole('link', { name: 'trade-register.pdf' }).isVisible());
    await acmeCard.getByRole('button', { name: 'Approve AcmeShop' }).click();
    await ops.waitForURL(/\/operator\/sender-ids\?done=/);
    const badCard = ops.locator('section.review', { hasText: 'TrustMeBnk' });
    await badCard.getByLabel('Reason for rejection').fill('The name imitates a bank.');
    await badCard.getByRole('button', { name: 'Reject TrustMeBnk' }).click();
    await ops.waitForURL(/\/operator\/sender-ids\?done=/);
    assert.match((await ops.locator('main').textContent()) ?? '', /No Sender IDs are waiting/);

    // The owner sees the badges change and the reason.
    await page.reload();
    assert.equal(await page.locator('tr', { hasText: 'AcmeShop' }).locator('.badge').textContent(), 'Approved');
    const rejected = page.locator('tr', { hasText: 'TrustMeBnk' });
    assert.equal(await rejected.locator('.badge').textContent(), 'Rejected');
    assert.match((await rejected.textContent()) ?? '', /The name imitates a bank\./);

    // Both mails are in the outbox (no SMTP_URL); the worker marks them held.
    await ops.getByRole('link', { name: 'Mail outbox' }).click();
    await waitFor(
      async () => {
        if ((await ops.locator('.badge-held').count()) >= 2) return true;
        await ops.reload();
        return false;
      },
      { timeout: 10_000, interval: 50, message: 'both mails held in the outbox' },
    );
    const outbox = (await ops.locator('main').textContent()) ?? '';
    assert.match(outbox, /Sender ID AcmeShop approved/);
    assert.match(outbox, /Sender ID TrustMeBnk rejected/);
    assert.match(outbox, /owner@acme\.test/);
    assert.equal(await ops.locator('.badge-held').count(), 2);

    // The operator tops the account up.
    await ops.getByRole('link', { name: 'Accounts' }).click();
    await ops.getByLabel('Search by name, e-mail or account ID').fill('acme.test');
    await ops.getByRole('button', { name: 'Search' }).click();
    await ops.getByLabel('Credits to add').fill('100');
    await ops.getByRole('button', { name: `Top up ${OWNER.name}` }).click();
    await ops.waitForURL(/done=/);
    assert.match((await ops.locator('main').textContent()) ?? '', /Added 100 credits/);

    // Send with the key, then find the message in Messages with its status.
    const sent = await api('POST', '/v1/sms/send', { to: '+14155550123', from: 'AcmeShop', message: 'Your order has shipped.' });
    assert.equal(sent.status, 200, await sent.clone().text());
    const messageId = ((await sent.json()) as { message_id: string }).message_id;
    await page.getByRole('link', { name: 'Messages' }).click();
    const row = page.locator('tr', { hasText: messageId });
    await waitFor(
      async () => {
        if ((await row.locator('.badge').textContent()) === 'Delivered') return true;
        await page.reload();
        return false;
      },
      { timeout: 10_000, interval: 50, message: 'the message shown as delivered' },
    );
    assert.equal(await row.locator('.badge').textContent(), 'Delivered');
    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('button', { name: 'Filter' }).click();
    assert.equal(await page.locator('tr', { hasText: messageId }).count(), 0, 'the status filter applies');
    await page.goto(`${base}/dashboard/messages/${messageId}`);
    assert.equal(await page.locator('#message-status .badge').textContent(), 'Delivered');

    // Revoke the key (with the confirmation) and the API answers 401 api_key_revoked.
    await page.goto(`${base}/dashboard/settings/api-keys`);
    await page.getByRole('button', { name: 'Revoke the key Production server' }).click();
    await page.waitForURL(`${base}/dashboard/settings/api-keys`);
    await page.locator('.badge-revoked').waitFor();
    const refused = await api('GET', '/v1/account');
    assert.equal(refused.status, 401);
    assert.equal(((await refused.json()) as { code: string }).code, 'api_key_revoked');

    // Every page, at both widths.
    shots.push(
      { area: 'owner', name: 'overview', url: '/dashboard' },
      { area: 'owner', name: 'api-keys', url: '/dashboard/settings/api-keys' },
      { area: 'owner', name: 'webhook-secret', url: '/dashboard/settings/webhook' },
      { area: 'owner', name: 'password', url: '/dashboard/settings/password' },
      { area: 'owner', name: 'sender-ids', url: '/dashboard/sender-ids' },
      { area: 'owner', name: 'messages', url: '/dashboard/messages' },
      { area: 'owner', name: 'message-detail', url: `/dashboard/messages/${messageId}` },
      { area: 'owner', name: 'credits', url: '/dashboard/credits' },
      { area: 'operator', name: 'operator-queue', url: '/operator/sender-ids' },
      { area: 'operator', name: 'operator-accounts', url: '/operator/accounts' },
      { area: 'operator', name: 'operator-outbox', url: '/operator/outbox' },
    );
    for (const s of shots) await capture(s.area === 'owner' ? ownerContext : opsContext, s.name, s.url);
    const anonymous = await stack.browser.newContext();
    await capture(anonymous, 'signup', '/dashboard/signup');
    await capture(anonymous, 'login', '/dashboard/login');
    await capture(anonymous, 'operator-login', '/operator/login');
    await anonymous.close();
    await ownerContext.close();
    await opsContext.close();
  });
});
