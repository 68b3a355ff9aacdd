/**
 * The operator console's rate cards in a real browser (Debian's chromium, headless,
 * playwright-core) against `pigeon serve` on a free port of 127.0.0.1 with a throwaway SQLite
 * file: upload a CSV, see the difference with nothing changed, apply it, export the card.
 * Screenshots go to test-results/rate-cards/.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { logIn, openPage, startBrowserStack, type BrowserStack } from '../helpers/browser.ts';

const SHOTS = 'test-results/rate-cards';
const OPERATOR = { email: 'ops@pigeon.test', password: 'a long operator password' };

describe('rate cards in a browser', () => {
  let stack: BrowserStack;
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-e2e-cards-'));

  before(async () => {
    stack = await startBrowserStack({ shots: SHOTS, operator: OPERATOR });
  });
  after(async () => {
    await stack?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('upload, difference, apply, export', async () => {
    const { base, cli } = stack;
    const file = join(dir, 'gold.csv');
    writeFileSync(file, 'prefix,credits_per_segment\n+44,3\n+447,5\n+4479,blocked\n');
    const { page } = await openPage(stack.browser, { viewport: { width: 1280, height: 800 }, acceptDownloads: true });
    await page.goto(`${base}/operator/login`);
    await logIn(page, OPERATOR);
    await page.getByRole('link', { name: 'Rate cards' }).click();
    await page.getByLabel('Card (new or existing)').fill('gold');
    await page.getByLabel(/^CSV file/).setInputFiles(file);
    await page.getByRole('button', { name: 'Show the difference' }).click();
    await page.locator('#diff-summary').getByText('3 added, 0 raised, 0 lowered, 0 removed, 0 unchanged').waitFor();
    await page.screenshot({ path: `${SHOTS}/difference.png`, fullPage: true });
    assert.equal(cli<{ data: { name: string }[] }>('rate-card', 'list').data.some((c) => c.name === 'gold'), false, 'nothing changed before Apply');

    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText(/Rate card gold: 3 added/).waitFor();
    await page.screenshot({ path: `${SHOTS}/applied.png`, fullPage: true });
    const shown = cli<{ entries: { prefix: string; credits_per_segment: number | string }[] }>('rate-card', 'show', 'gold');
    assert.deepEqual(shown.entries.map((e) => [e.prefix, e.credits_per_segment]), [['+44', 3], ['+447', 5], ['+4479', 'blocked']]);

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export gold as CSV' }).click()]);
    const saved = join(dir, 'exported.csv');
    await download.saveAs(saved);
    const { readFileSync } = await import('node:fs');
    assert.equal(readFileSync(saved, 'utf8'), 'prefix,credits_per_segment\n+44,3\n+447,5\n+4479,blocked\n');
  });
});
