/**
 * Campaigns in a real browser: Debian's chromium, headless, driven by playwright-core against
 * `pigeon serve` (a child process on a free port, a throwaway SQLite file). An owner whose browser
 * is in Paris uploads a CSV, checks the preview and the cost, schedules the campaign for a date in
 * Paris time, cancels it (refunded), then sends another at once, following the upload's progress
 * bar, and watches it finish and its chart of deliveries drawn. Two owners in the United Kingdom
 * upload contact lists as people export them: one with a `Phone Number` column, national numbers
 * and a number twice, sent as it comes; one with two phone columns, asked which to use.
 * Screenshots go to test-results/dashboard/.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openPage, signUp, startBrowserStack, type BrowserStack } from '../helpers/browser.ts';

const SHOTS = 'test-results/dashboard';
const OWNER = { name: 'Bakery Mole', email: 'owner@bakery.test', password: 'a long owner password' };
/** Three numbers to send to and one row that cannot be sent. */
const CUSTOMERS = {
  name: 'customers.csv',
  mimeType: 'text/csv',
  buffer: Buffer.from('to,first_name\n+33612345678,Ana\n+33612345679,Zoë\nnot a number,Bob\n+33612345670,Eve\n'),
};

/** `YYYY-MM-DDTHH:MM` of an instant in a time zone (what a datetime-local input holds). */
function localInput(at: number, zone: string): string {
  const p = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' })
      .formatToParts(new Date(at))
      .map((x) => [x.type, x.value]),
  );
  return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}`;
}

describe('campaigns in a browser', () => {
  let stack: BrowserStack;
  let base: string;
  let cli: BrowserStack['cli'];

  before(async () => {
    stack = await startBrowserStack({ shots: SHOTS, env: { SIM_DELIVERY_DELAY_MS: '50', BULK_MAX_MESSAGES: '2' } });
    ({ base, cli } = stack);
  });

  after(() => stack?.close());

  test('upload, preview and cost, schedule in the owner’s zone, cancel; send now and watch it finish', async () => {
    const { context, page } = await openPage(stack.browser, { viewport: { width: 1280, height: 900 }, timezoneId: 'Europe/Paris' });

    await page.goto(`${base}/dashboard/signup`);
    await signUp(page, base, OWNER);
    await page.getByRole('link', { name: 'Sender IDs' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Bakery');
    await page.getByRole('button', { name: 'Register' }).click();
    await page.waitForURL(`${base}/dashboard/sender-ids`);
    const senders = cli<{ data: { id: string; name: string }[] }>('sender-id', 'list');
    cli('sender-id', 'approve', senders.data.find((s) => s.name === 'Bakery')!.id);
    const accounts = cli<{ data: { id: string }[] }>('account', 'list', '--email', OWNER.email);
    const accountId = accounts.data[0]!.id;
    cli('credits', 'add', accountId, '5');

    // Compose: the preview fills the template per row, lists the bad row, and prices the campaign.
    await page.getByRole('link', { name: 'Campaigns' }).click();
    await page.getByRole('link', { name: 'New campaign' }).click();
    assert.equal(await page.getByLabel('Time zone').inputValue(), 'Europe/Paris', 'the browser’s zone by default');
    assert.equal(await page.getByLabel('Category').inputValue(), 'marketing', 'a campaign is marketing unless changed');
    await page.getByLabel('Message template').fill('Hi {{first_name}}, your bread is ready');
    await page.getByLabel('Recipients (CSV or XLSX file)').setInputFiles(CUSTOMERS);
    await page.locator('#campaign-cost').waitFor();
    assert.match((await page.locator('#file-summary').textContent()) ?? '', /4 rows .*3 messages to send, 1 row that cannot be sent/);
    assert.ok(await page.getByRole('cell', { name: 'Hi Zoë, your bread is ready' }).isVisible());
    assert.match((await page.locator('#invalid-rows').textContent()) ?? '', /4not a number`to` is not a valid E\.164 number/);
    assert.equal(await page.locator('[data-credits]').getAttribute('data-credits'), '3');
    assert.equal(await page.locator('[data-balance]').getAttribute('data-balance'), '5');
    await page.screenshot({ path: `${SHOTS}/campaign-composer-desktop.png`, fullPage: true });

    // A time the clocks skip is refused, with the reason.
    await page.getByLabel('At a date and time').check();
    await page.getByLabel('Date and time', { exact: true }).fill('2027-03-28T02:30');
    await page.getByRole('button', { name: 'Send campaign' }).click();
    await page.getByText('2027-03-28 02:30 does not exist in Europe/Paris').waitFor();

    // Schedule for two days ahead at 09:00 Paris time.
    const when = localInput(Date.now() + 2 * 86_400_000, 'Europe/Paris').slice(0, 10) + 'T09:00';
    await page.getByLabel('At a date and time').check();
    await page.getByLabel('Date and time', { exact: true }).fill(when);
    await page.getByLabel('Recipients (CSV or XLSX file)').setInputFiles(CUSTOMERS);
    await page.getByRole('button', { name: 'Send campaign' }).click();
    await page.waitForURL(/\/dashboard\/campaigns\/cmp_/);
    assert.match((await page.locator('main').textContent()) ?? '', /09:00 Europe\/Paris/);
    assert.equal(await page.locator('[data-status-count="scheduled"]').textContent(), '3');
    await page.screenshot({ path: `${SHOTS}/campaign-scheduled-desktop.png`, fullPage: true });
    await page.getByRole('button', { name: 'Cancel the scheduled messages' }).click();
    await page.getByText('3 scheduled messages canceled; 3 credits refunded.').waitFor();
    assert.equal(await page.locator('[data-status-count="canceled"]').textContent(), '3');
    assert.equal(await page.locator('#chart canvas').count(), 0, 'nothing delivered: no chart drawn');

    // Send now, and watch the counts move to delivered (the page polls). The send shows that the
    // server is checking the rows, with the button disabled: a double click makes one campaign.
    const seen: string[] = [];
    await page.exposeFunction('recordSendState', (state: string) => void seen.push(state));
    await page.goto(`${base}/dashboard/campaigns/new`);
    // Transactional: sent at once whatever the hour in France (a marketing one may wait for 08:00 there).
    await page.getByLabel('Category').selectOption('transactional');
    await page.getByLabel('Message template').fill('Fresh croissants, {{first_name}}!');
    await page.getByLabel('Recipients (CSV or XLSX file)').setInputFiles({
      name: 'morning.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from('to;first_name\n+33612345678;Ana\n+33612345679;Zoë\n+33612345670;Eve\n'),
    });
    await page.locator('#campaign-cost').waitFor();
    assert.equal(await page.locator('#held-note').getAttribute('data-held'), '0', 'a transactional campaign holds no one');
    // The template's change (which the click on Send would fire by taking the focus) posts a
    // preview too: made here and answered, so that what the bar shows next is the send's alone.
    await page.getByLabel('Message template').blur();
    await page.waitForLoadState('networkidle');
    const bar: string[] = [];
    await page.exposeFunction('recordUploadBar', (state: string) => void bar.push(state));
    await page.evaluate(() => {
      const status = document.getElementById('send-status')!;
      const button = document.getElementById('send-campaign') as HTMLButtonElement;
      const progress = document.getElementById('upload-progress') as HTMLProgressElement;
      const record = (window as unknown as { recordSendState: (s: string) => void }).recordSendState;
      const recordBar = (window as unknown as { recordUploadBar: (s: string) => void }).recordUploadBar;
      new MutationObserver(() => record(`${status.textContent}|${button.disabled ? 'disabled' : 'enabled'}`)).observe(status, { childList: true, characterData: true, subtree: true });
      // The preview's upload left the bar full: the send starts it again from empty.
      progress.value = 0;
      new MutationObserver(() => recordBar(`${progress.hidden ? 'hidden' : 'shown'}:${progress.getAttribute('value') ?? 'indeterminate'}`)).observe(progress, { attributes: true, attributeFilter: ['hidden', 'value'] });
    });
    await page.getByRole('button', { name: 'Send campaign' }).dblclick();
    await page.waitForURL(/\/dashboard\/campaigns\/cmp_/);
    assert.ok(seen.includes('Checking 3 rows…|disabled'), `the send said it was checking the rows, button disabled: ${JSON.stringify(seen)}`);
    assert.ok(seen.includes('Uploading the file: 100%|disabled'), `the send counted the upload to 100 %: ${JSON.stringify(seen)}`);
    // The bar shows the upload up to 100 %, then turns indeterminate while the server checks the rows.
    const complete = bar.indexOf('shown:100');
    assert.ok(complete >= 0 && bar.indexOf('shown:indeterminate', complete) > complete, `the upload bar shown, complete, then checking: ${JSON.stringify(bar)}`);
    await page.locator('[data-status-count="delivered"]', { hasText: '3' }).waitFor({ timeout: 30_000 });
    // Delivered: the polled page draws the chart of deliveries per minute, once, and again on a reload.
    await page.locator('#chart canvas').first().waitFor();
    const drawn = async () => ({ charts: await page.locator('#chart .uplot').count(), canvases: await page.locator('#chart canvas').count(), width: await page.locator('#chart canvas').evaluate((c: HTMLCanvasElement) => c.width) });
    const chart = await drawn();
    assert.deepEqual([chart.charts, chart.canvases], [1, 1], 'one chart in #chart');
    assert.ok(chart.width > 0, 'drawn with a size');
    assert.match((await page.locator('#chart').textContent()) ?? '', /delivered/, 'its legend names the series');
    await page.reload();
    await page.locator('#chart canvas').first().waitFor();
    const reloaded = await drawn();
    assert.deepEqual([reloaded.charts, reloaded.canvases], [1, 1], 'drawn on load too');
    await page.screenshot({ path: `${SHOTS}/campaign-finished-desktop.png`, fullPage: true });
    const csv = await page.evaluate(async (href) => (await fetch(href)).text(), `${page.url()}/results.csv`);
    assert.equal(csv.trimEnd().split('\r\n').length, 4);
    assert.match(csv, /'\+33612345678,delivered/);
    await page.goto(`${base}/dashboard/campaigns`);
    assert.equal(await page.locator('tbody tr').count(), 2, 'the scheduled campaign and this one: the double click made one');
    await context.close();
  });
  /** A new owner, signed up in `page`, with the approved Sender ID `Bakery` and `credits`. */
  async function readyOwner(page: import('playwright-core').Page, email: string, credits: number) {
    await page.goto(`${base}/dashboard/signup`);
    await signUp(page, base, { name: 'Corner Bakery', email, password: OWNER.password });
    await page.getByRole('link', { name: 'Sender IDs' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Bakery');
    await page.getByRole('button', { name: 'Register' }).click();
    await page.waitForURL(`${base}/dashboard/sender-ids`);
    const accountId = cli<{ data: { id: string }[] }>('account', 'list', '--email', email).data[0]!.id;
    cli('sender-id', 'approve', cli<{ data: { id: string }[] }>('sender-id', 'list', '--account', accountId).data[0]!.id);
    cli('credits', 'add', accountId, String(credits));
    await page.goto(`${base}/dashboard/campaigns/new`);
    return accountId;
  }
  const toCells = async (page: import('playwright-core').Page) => page.locator('#campaign-preview tbody tr td[data-label="To"]').allTextContents();

  test('a contact export (Phone Number, First Name; national UK numbers, one twice) is read as it is: nothing picked by hand, the right preview, cost and sends', async () => {
    const { context, page } = await openPage(stack.browser, { viewport: { width: 1280, height: 900 }, locale: 'en-GB', timezoneId: 'Europe/London' });
    await readyOwner(page, 'uk-owner@bakery.test', 10);
    await page.getByLabel('Category').selectOption('transactional');
    assert.equal(await page.getByLabel('Country of numbers without “+”').inputValue(), 'GB', 'guessed from the browser’s language');
    await page.getByLabel('Message template').fill('Hi {{first_name}}, your loaf is ready');
    await page.getByLabel('Recipients (CSV or XLSX file)').setInputFiles({
      name: 'contacts.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from('Phone Number,First Name\n07400 123401,Ann\n07400 123402,Bob\n+44 7400 123401,Ann again\n'),
    });
    await page.locator('#campaign-cost').waitFor();
    assert.match((await page.locator('#file-summary').textContent()) ?? '', /3 rows .*2 messages to send\.$/);
    assert.match((await page.locator('#recipients-summary').textContent()) ?? '', /column “Phone Number” \(found by its name\); numbers without “\+” read as numbers of United Kingdom \(\+44\)/);
    assert.deepEqual(await toCells(page), ['+447400123401written 07400 123401', '+447400123402written 07400 123402']);
    assert.ok(await page.getByRole('cell', { name: 'Hi Ann, your loaf is ready' }).isVisible());
    assert.equal(await page.getByRole('cell', { name: 'Hi Ann again, your loaf is ready' }).count(), 0, 'the repeat is not sent');
    assert.match((await page.locator('#duplicates').textContent()) ?? '', /1 row repeats a number already in the file: each number gets one message, the first row’s/);
    assert.equal(await page.locator('[data-credits]').getAttribute('data-credits'), '2');
    assert.equal(await page.getByLabel('Campaign name').getAttribute('placeholder'), `contacts.csv ${new Date().toISOString().slice(0, 10)}`);
    await page.screenshot({ path: `${SHOTS}/campaign-contacts-preview-desktop.png`, fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 390), 'the composer and its preview fit a phone');
    await page.screenshot({ path: `${SHOTS}/campaign-contacts-preview-phone.png`, fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });

    await page.getByRole('button', { name: 'Send campaign' }).click();
    await page.waitForURL(/\/dashboard\/campaigns\/cmp_/);
    assert.equal(await page.title(), `Campaign contacts.csv ${new Date().toISOString().slice(0, 10)} · Pigeon`);
    assert.match((await page.locator('main').textContent()) ?? '', /3 rows: 2 messages, 1 row repeating a number skipped/);
    await page.locator('[data-status-count="delivered"]', { hasText: '2' }).waitFor({ timeout: 30_000 });
    const csv = await page.evaluate(async (href) => (await fetch(href)).text(), `${page.url()}/results.csv`);
    const lines = csv.trimEnd().split('\r\n').slice(1);
    assert.deepEqual(lines.map((l) => l.split(',')[2]).sort(), ["'+447400123401", "'+447400123402"]);
    assert.ok(lines.every((l) => l.endsWith(`,contacts.csv ${new Date().toISOString().slice(0, 10)},transactional,`)), csv);
    assert.equal(cli<{ data: { credits_remaining: number }[] }>('account', 'list', '--email', 'uk-owner@bakery.test').data[0]!.credits_remaining, 8, 'two credits debited');
    await page.screenshot({ path: `${SHOTS}/campaign-contacts-sent-desktop.png`, fullPage: true });
    await page.getByRole('link', { name: 'All campaigns' }).click();
    assert.ok(await page.getByRole('link', { name: new RegExp(`^contacts\\.csv ${new Date().toISOString().slice(0, 10)} cmp_`) }).isVisible(), 'listed by its name');
    await page.screenshot({ path: `${SHOTS}/campaign-list-desktop.png`, fullPage: true });
    await context.close();
  });

  test('a file with two phone columns: the composer asks which to use, and sends to that one', async () => {
    const { context, page } = await openPage(stack.browser, { viewport: { width: 1280, height: 900 }, locale: 'en-GB', timezoneId: 'Europe/London' });
    await readyOwner(page, 'two-columns@bakery.test', 10);
    await page.getByLabel('Message template').fill('Hi {{name}}');
    await page.getByLabel('Recipients (CSV or XLSX file)').setInputFiles({
      name: 'staff.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from('Name,Phone,Mobile\nAnn,020 7946 0958,07400 123411\nBob,020 7946 0959,07400 123412\n'),
    });
    const question = page.getByRole('alert').filter({ hasText: 'Which column holds the phone numbers?' });
    await question.waitFor();
    assert.match((await question.textContent()) ?? '', /Several could: Phone, Mobile/);
    assert.equal(await page.locator('#campaign-cost').count(), 0, 'no preview until the column is known');
    const column = page.getByLabel('Phone numbers column');
    assert.deepEqual(await column.locator('option').allTextContents(), ['Choose the column…', 'Name', 'Phone', 'Mobile']);
    await page.screenshot({ path: `${SHOTS}/campaign-column-question-desktop.png`, fullPage: true });
    await column.selectOption('Mobile');
    await page.locator('#campaign-cost').waitFor();
    assert.deepEqual(await toCells(page), ['+447400123411written 07400 123411', '+447400123412written 07400 123412']);
    assert.match((await page.locator('#recipients-summary').textContent()) ?? '', /column “Mobile”;/);
    await page.getByRole('button', { name: 'Send campaign' }).click();
    await page.waitForURL(/\/dashboard\/campaigns\/cmp_/);
    const csv = await page.evaluate(async (href) => (await fetch(href)).text(), `${page.url()}/results.csv`);
    assert.deepEqual(csv.trimEnd().split('\r\n').slice(1).map((l) => l.split(',')[2]).sort(), ["'+447400123411", "'+447400123412"]);
    // The next upload starts on the column chosen.
    await page.goto(`${base}/dashboard/campaigns/new`);
    assert.equal(await page.getByLabel('Phone numbers column').inputValue(), 'Mobile');
    await context.close();
  });
});
