/**
 * The operator's Routes and Margin pages in chromium against a live `pigeon serve` bound to two
 * SMSCs on 127.0.0.1: the seeded route shown bound, a route added through the form binds and is
 * shown bound, changed, removed (it unbinds); the margin page; nothing overflows a phone.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, logIn, startBrowserStack, type BrowserStack } from '../helpers/browser.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { TestSmsc } from '../smpp/smsc.ts';

const SHOTS = 'test-results/routes';
const OPERATOR = { email: 'ops@pigeon.test', password: 'a long operator password' };

describe('routes in a browser', () => {
  let stack: BrowserStack;
  let uk: TestSmsc;
  let fr: TestSmsc;

  before(async () => {
    uk = new TestSmsc({ systemId: 'uk-user', password: 'uk-pass' });
    fr = new TestSmsc({ systemId: 'fr-user', password: 'fr-pass' });
    await Promise.all([uk.listen(), fr.listen()]);
    stack = await startBrowserStack({
      shots: SHOTS,
      operator: OPERATOR,
      env: {
        CARRIER: 'smpp',
        SMPP_RECONNECT_MIN_MS: '50',
        SMPP_ROUTES: JSON.stringify([{ name: 'uk', prefixes: ['+44'], host: '127.0.0.1', port: uk.port, system_id: 'uk-user', password: 'uk-pass' }]),
      },
    });
  });
  after(async () => {
    await stack?.close();
    await Promise.all([uk?.stop(), fr?.stop()]);
  });

  test('list, add, see it bound, change, remove; the margin page', async () => {
    const { base } = stack;
    const { context, page } = await openPage(stack.browser, { viewport: { width: 1280, height: 900 } });
    try {
      await page.goto(`${base}/operator/login`);
      await logIn(page, OPERATOR);
      await page.waitForURL(`${base}/operator/sender-ids`);
      await page.getByRole('link', { name: 'Routes' }).click();
      await page.waitForURL(`${base}/operator/routes`);
      // Link states are written every second: the page shows the seeded route bound after a reload or two.
      await waitFor(async () => {
        await page.reload();
        return (await page.locator('tr', { hasText: 'uk' }).locator('.badge').textContent())?.trim() === 'Bound';
      }, { timeout: 10_000, interval: 300, message: 'the seeded route shown bound' });

      await page.getByLabel('Name').fill('fr');
      await page.getByLabel('Prefixes (comma-separated, + for every recipient)').fill('+33');
      await page.getByLabel('Host').fill('127.0.0.1');
      await page.getByLabel('Port').fill(String(fr.port));
      await page.getByLabel('system_id').fill('fr-user');
      await page.getByLabel('Password').fill('fr-pass');
      await page.getByLabel('Carrier cost per segment, in credits (empty: not recorded)').fill('2');
      await page.getByRole('button', { name: 'Add route' }).click();
      await page.waitForURL(/\/operator\/routes\?done=/);
      await waitFor(() => fr.binds === 1, { timeout: 2000, message: 'the added route bound within 2 s' });
      await waitFor(async () => {
        await page.reload();
        return (await page.locator('tr', { hasText: 'fr-user' }).locator('.badge').textContent())?.trim() === 'Bound';
      }, { timeout: 10_000, interval: 300, message: 'the added route shown bound' });
      assert.ok(!(await page.content()).includes('fr-pass'));

      await page.getByRole('link', { name: 'fr', exact: true }).click();
      await page.waitForURL(`${base}/operator/routes/fr`);
      assert.equal(await page.getByLabel('Password (leave empty to keep it)').inputValue(), '');
      await page.getByLabel('Priority (higher first among the same prefix)').fill('7');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.waitForURL(/\/operator\/routes\?done=/);
      assert.match(await page.locator('tr', { hasText: 'fr-user' }).textContent() ?? '', /\+33\s*7/);
      assert.equal(fr.binds, 1, 'a new priority does not bind again');

      await page.setViewportSize({ width: 375, height: 800 });
      await page.screenshot({ path: `${SHOTS}/operator-routes-phone.png`, fullPage: true });
      assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 376, 'the routes page fits a phone');
      await page.setViewportSize({ width: 1280, height: 900 });

      await page.getByRole('button', { name: 'Remove fr' }).click();
      await page.waitForURL(/\/operator\/routes\?done=/);
      await waitFor(() => fr.connections === 0, { timeout: 2000, message: 'the removed route unbound within 2 s' });
      assert.equal(await page.getByRole('button', { name: 'Remove fr' }).count(), 0);

      await page.getByRole('link', { name: 'Margin' }).click();
      await page.waitForURL(`${base}/operator/margin`);
      await page.getByText('No route took a message in these days.').waitFor();
      await page.screenshot({ path: `${SHOTS}/operator-margin-desktop.png`, fullPage: true });
    } finally {
      await context.close();
    }
  });
});
