/**
 * Marketing traffic in a real browser (DECISIONS.md §16): Debian's chromium, headless, driven by
 * playwright-core against `pigeon serve` bound over SMPP to a test SMSC on 127.0.0.1, which
 * acknowledges and delivers what it receives. Settings → Quiet hours (read, change, a window wider
 * than 08:00-21:00 refused with the reason, the saved window shown again); the composer's
 * category and link-tracking switches and what its preview says of them (segments and credits of
 * a long link tracked, a marketing message to a +1 number outside its window counted as held);
 * a held marketing campaign's page, then a transactional one sent with tracked links, its link
 * opened from the text the SMSC received as a phone would, and the page's clicks and click chart.
 * Screenshots go to test-results/marketing/.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { openPage, signUp, startBrowserStack, type BrowserStack } from '../helpers/browser.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { TestSmsc } from '../smpp/smsc.ts';

const SHOTS = 'test-results/marketing';
const PASSWORD = 'a long owner password';
const PHONE_UA = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1';

/** The local hour now in `zone`. */
const hourIn = (zone: string) => Number(new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', hourCycle: 'h23' }).format(new Date()));

describe('marketing in a browser', () => {
  let smsc: TestSmsc;
  let stack: BrowserStack;
  let base: string;

  before(async () => {
    smsc = new TestSmsc({ systemId: 'mkt-user', password: 'mkt-pass' });
    smsc.autoReceipt = { stat: 'DELIVRD' };
    await smsc.listen();
    stack = await startBrowserStack({
      shots: SHOTS,
      env: { CARRIER: 'smpp', SMPP_HOST: '127.0.0.1', SMPP_PORT: String(smsc.port), SMPP_SYSTEM_ID: 'mkt-user', SMPP_PASSWORD: 'mkt-pass', SMPP_RECONNECT_MIN_MS: '50' },
    });
    base = stack.base;
  });
  after(async () => {
    await stack?.close();
    await smsc?.stop();
  });

  /** A new owner signed up in `page`; with `credits`, also the approved Sender ID `Bakery` and those credits. */
  async function readyOwner(page: Page, email: string, credits = 0): Promise<void> {
    await page.goto(`${base}/dashboard/signup`);
    await signUp(page, base, { name: 'Corner Bakery', email, password: PASSWORD });
    if (credits === 0) return;
    await page.goto(`${base}/dashboard/sender-ids`);
    await page.getByLabel('Name', { exact: true }).fill('Bakery');
    await page.getByRole('button', { name: 'Register' }).click();
    await page.waitForURL(`${base}/dashboard/sender-ids`);
    // The one pending Sender ID is this owner's: it names the account, which saves a look-up.
    const pending = stack.cli<{ data: { id: string; account_id: string }[] }>('sender-id', 'list', '--status', 'pending').data[0]!;
    stack.cli('sender-id', 'approve', pending.id);
    stack.cli('credits', 'add', pending.account_id, String(credits));
  }

  /** Sets the account's window through Settings → Quiet hours. */
  async function setWindow(page: Page, start: string, end: string): Promise<void> {
    await page.goto(`${base}/dashboard/settings/quiet-hours`);
    await page.getByLabel('From').fill(start);
    await page.getByLabel('Until').fill(end);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('The quiet hours were saved.').waitFor();
  }

  test('Settings → Quiet hours: the default window, a narrower one saved and shown again, a wider one refused with the reason', async () => {
    const { context, page } = await openPage(stack.browser, { viewport: { width: 1280, height: 900 } });
    try {
      await readyOwner(page, 'quiet@bakery.test');
      await page.getByRole('link', { name: 'Settings' }).click();
      await page.getByRole('link', { name: 'Quiet hours' }).click();
      await page.waitForURL(`${base}/dashboard/settings/quiet-hours`);
      assert.match((await page.locator('#quiet-hours-current').textContent()) ?? '', /only between 08:00 and 20:00 in the recipient’s own time zone/);
      assert.equal(await page.getByLabel('From').inputValue(), '08:00');
      assert.equal(await page.getByLabel('Until').inputValue(), '20:00');

      await setWindow(page, '09:30', '19:00');
      assert.match((await page.locator('#quiet-hours-current').textContent()) ?? '', /between 09:30 and 19:00/);
      await page.reload();
      assert.deepEqual([await page.getByLabel('From').inputValue(), await page.getByLabel('Until').inputValue()], ['09:30', '19:00'], 'the saved window is the form’s');

      // Wider than the law allows: the browser stops it at the field, saying the limit.
      await page.getByLabel('From').fill('07:00');
      await page.getByRole('button', { name: 'Save' }).click();
      assert.match(await page.getByLabel('From').evaluate((i: HTMLInputElement) => i.validationMessage), /\b0?8:00\b/);
      assert.equal(page.url(), `${base}/dashboard/settings/quiet-hours`);
      // A browser that does not check (or a form posted some other way) gets the server's reason,
      // the times typed kept in the form and the saved window unchanged.
      await page.getByLabel('Until').fill('21:00');
      await page.locator('form[action="/dashboard/settings/quiet-hours"]').evaluate((f: HTMLFormElement) => (f.noValidate = true));
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('alert').filter({ hasText: 'The sending window must lie within 08:00-21:00.' }).waitFor();
      assert.deepEqual([await page.getByLabel('From').inputValue(), await page.getByLabel('Until').inputValue()], ['07:00', '21:00']);
      assert.match((await page.locator('#quiet-hours-current').textContent()) ?? '', /between 09:30 and 19:00/, 'nothing saved');
      await page.screenshot({ path: `${SHOTS}/quiet-hours-refused-desktop.png`, fullPage: true });

      await setWindow(page, '08:00', '21:00');
      await page.reload();
      assert.match((await page.locator('#quiet-hours-current').textContent()) ?? '', /between 08:00 and 21:00/, 'the widest window the law allows is accepted');
    } finally {
      await context.close();
    }
  });

  test('the composer: category and link tracking change the preview (held recipients, segments, credits); a held marketing campaign; a tracked one clicked from the phone, its clicks and chart', async () => {
    const { context, page } = await openPage(stack.browser, { viewport: { width: 1280, height: 900 }, timezoneId: 'America/New_York', locale: 'en-US' });
    const phone = await stack.browser.newContext({ userAgent: PHONE_UA });
    try {
      await readyOwner(page, 'composer@bakery.test', 20);
      // A one-hour window: New York and Los Angeles are three hours apart, so one of them is at
      // least an hour away from it, whenever the test runs.
      await setWindow(page, '08:00', '09:00');
      const outside = [7, 8, 9].includes(hourIn('America/New_York')) ? '+12135550142' : '+12125550142';
      // As written, the long link makes the text two segments; tracked, its short link fits in one.
      const template = `Fresh bread today: ${base}/?offer=spring-${'r'.repeat(120)}`;
      await page.goto(`${base}/dashboard/campaigns/new`);
      assert.equal(await page.getByLabel('Category').inputValue(), 'marketing');
      assert.equal(await page.getByRole('checkbox', { name: /Track links/ }).isChecked(), false);
      await page.getByLabel('Message template').fill(template);
      await page.getByLabel('Recipients (CSV or XLSX file)').setInputFiles({ name: 'regulars.csv', mimeType: 'text/csv', buffer: Buffer.from(`to\n${outside}\n`) });
      await page.locator('#campaign-cost').waitFor();
      const held = page.locator('#held-note');
      assert.equal(await held.getAttribute('data-held'), '1', 'the +1 number outside its window is held');
      assert.match((await held.textContent()) ?? '', /1 recipient is outside the quiet-hours window in their time zone: it is held \(charged now\) until it opens, at \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
      assert.equal(await page.locator('[data-credits]').getAttribute('data-credits'), '2', 'two segments as written');
      assert.equal(await page.locator('#campaign-preview td[data-label="Segments"]').textContent(), '2');

      // Link tracking on: the preview refreshes, with the short link and one segment.
      await page.getByRole('checkbox', { name: /Track links/ }).check();
      await page.locator('#track-links-note').waitFor();
      assert.equal(await page.locator('[data-credits]').getAttribute('data-credits'), '1', 'one segment once the link is short');
      assert.equal(await page.locator('#campaign-preview td[data-label="Segments"]').textContent(), '1');
      assert.match((await page.locator('#campaign-preview td[data-label="Message"]').textContent()) ?? '', new RegExp(`^Fresh bread today: ${base.replace(/[.]/g, '\\.')}/l/[0-9A-Za-z]{8,10}$`));
      await page.screenshot({ path: `${SHOTS}/composer-marketing-held-desktop.png`, fullPage: true });
      // Transactional: no one held; back to marketing: held again.
      await page.getByLabel('Category').selectOption('transactional');
      await page.locator('#held-note[data-held="0"]').waitFor();
      assert.match((await held.textContent()) ?? '', /^Transactional: sent at once/);
      await page.getByLabel('Category').selectOption('marketing');
      await page.locator('#held-note[data-held="1"]').waitFor();

      // Sent as marketing: accepted and charged, held, its page says so; nothing reached the SMSC.
      await page.getByRole('button', { name: 'Send campaign' }).click();
      await page.waitForURL(/\/dashboard\/campaigns\/cmp_/);
      assert.equal(await page.locator('#campaign-category').textContent(), 'Marketing (held outside quiet hours)');
      assert.equal(await page.locator('[data-status-count="pending"]').textContent(), '1');
      assert.match((await page.locator('#campaign-credits').textContent()) ?? '', /^1 debited/);
      assert.equal(smsc.submits.length, 0, 'held: not handed to the carrier');

      // The same as transactional, tracked: it goes at once; the phone opens its link.
      await page.goto(`${base}/dashboard/campaigns/new`);
      await page.getByLabel('Category').selectOption('transactional');
      await page.getByRole('checkbox', { name: /Track links/ }).check();
      await page.getByLabel('Message template').fill(template);
      await page.getByLabel('Recipients (CSV or XLSX file)').setInputFiles({ name: 'regulars.csv', mimeType: 'text/csv', buffer: Buffer.from(`to\n${outside}\n`) });
      await page.locator('#held-note[data-held="0"]').waitFor();
      await page.getByRole('button', { name: 'Send campaign' }).click();
      await page.waitForURL(/\/dashboard\/campaigns\/cmp_/);
      const campaignUrl = page.url();
      assert.equal(await page.locator('#campaign-category').textContent(), 'Transactional');
      const received = await waitFor(() => smsc.submits.find((s) => `+${s.destination.replace(/^\+/, '')}` === outside));
      assert.equal(smsc.submits.length, 1, 'only the transactional message reached the SMSC');
      const link = /(http:\/\/127\.0\.0\.1:\d+\/l\/[0-9A-Za-z]{8,10})$/.exec(received.text)?.[1];
      assert.ok(link, `a short link in the text received: ${received.text}`);
      const tab = await phone.newPage();
      const opened = await tab.goto(link);
      assert.equal(tab.url(), `${base}/?offer=spring-${'r'.repeat(120)}`, 'the short link leads to the original URL');
      assert.ok(opened);

      // The click is recorded just after the redirect, the receipt as the SMSC sends it: the page
      // shows both once they are.
      await waitFor(async () => {
        await page.goto(campaignUrl);
        return (await page.locator('#campaign-clicks').getAttribute('data-clicks')) === '1' && (await page.locator('[data-status-count="delivered"]').count()) === 1;
      });
      assert.match((await page.locator('#campaign-clicks').textContent()) ?? '', /1 click; 1 recipient clicked: 100\.0% of the 1 delivered/);
      const chart = page.locator('#click-chart');
      assert.equal(await chart.getByRole('heading').textContent(), 'Clicks per hour (UTC)');
      assert.equal(await chart.locator('svg rect.bar').count(), 1);
      assert.equal(await chart.locator('svg rect.bar').getAttribute('data-value'), '1');
      assert.ok((await chart.locator('svg').boundingBox())!.width > 300, 'drawn at a readable size');
      const hour = `${new Date().toISOString().slice(0, 13).replace('T', ' ')}:00 UTC`;
      const rows = await chart.locator('tbody tr').allInnerTexts();
      // The click's hour, unless the hour turned between the click and now.
      assert.equal(rows.length, 1);
      assert.match(rows[0]!, /^\d{4}-\d\d-\d\d \d\d:00 UTC\t1$/);
      assert.ok(rows[0]!.startsWith(hour) || new Date().getUTCMinutes() < 1, `${rows[0]} is the hour of ${hour}`);
      await page.screenshot({ path: `${SHOTS}/campaign-clicks-desktop.png`, fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 390), 'the campaign page and its chart fit a phone');
      await page.screenshot({ path: `${SHOTS}/campaign-clicks-phone.png`, fullPage: true });
    } finally {
      await phone.close();
      await context.close();
    }
  });
});
