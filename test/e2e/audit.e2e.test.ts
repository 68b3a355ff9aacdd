/**
 * The audit log and operator roles in a real browser (Debian's chromium, headless, playwright-core)
 * against `pigeon serve` on 127.0.0.1: an operator whose role becomes `support` is refused the
 * rate card import the open form offers, and the refusal is in the log; an owner's Settings → Audit
 * log shows their sign-up and key and downloads the log as CSV. Screenshots go to
 * test-results/audit/.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { logIn, openPage, signUp, startBrowserStack, type BrowserStack } from '../helpers/browser.ts';

const SHOTS = 'test-results/audit';
const OPERATOR = { email: 'ops@pigeon.test', password: 'a long operator password' };
const OWNER = { name: 'Audited Ltd', email: 'owner@audited.test', password: 'a long owner password' };

describe('audit log and operator roles in a browser', () => {
  let stack: BrowserStack;
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-e2e-audit-'));

  before(async () => {
    stack = await startBrowserStack({ shots: SHOTS, operator: OPERATOR });
  });
  after(async () => {
    await stack?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a support operator is refused a price import, and the refusal is recorded', async () => {
    const { base, cli } = stack;
    const file = join(dir, 'gold.csv');
    writeFileSync(file, 'prefix,credits_per_segment\n+44,3\n');
    const { page } = await openPage(stack.browser, { viewport: { width: 1280, height: 800 } });
    await page.goto(`${base}/operator/login`);
    await logIn(page, OPERATOR);
    await page.getByRole('link', { name: 'Rate cards' }).click();
    await page.getByLabel('Card (new or existing)').fill('gold');
    await page.getByLabel(/^CSV file/).setInputFiles(file);
    // The form is open; the operator's role changes before it is sent.
    cli('operator', 'role', OPERATOR.email, '--role', 'support');
    await page.getByRole('button', { name: 'Show the difference' }).click();
    await page.getByText('Your operator role does not allow this.').waitFor();
    await page.screenshot({ path: `${SHOTS}/support-refused.png`, fullPage: true });
    assert.equal(cli<{ data: { name: string }[] }>('rate-card', 'list').data.some((c) => c.name === 'gold'), false);
    const refused = cli<{ data: { actor: { email: string }; target: { id: string } }[] }>('audit', 'list', '--action', 'operator.access_denied');
    assert.equal(refused.data[0]?.actor.email, OPERATOR.email);
    assert.equal(refused.data[0]?.target.id, 'POST /operator/rate-cards/preview');
    // What support may do still opens.
    await page.goto(`${base}/operator/sender-ids`);
    await page.locator('#queue-total').waitFor();
  });

  test("the owner's audit log lists their changes and downloads as CSV", async () => {
    const { base } = stack;
    const { page } = await openPage(stack.browser, { viewport: { width: 1280, height: 800 }, acceptDownloads: true });
    await page.goto(`${base}/dashboard/signup`);
    await signUp(page, base, OWNER);
    await page.goto(`${base}/dashboard/settings/api-keys`);
    await page.getByLabel('Label').fill('server');
    await page.getByRole('button', { name: 'Generate New Key' }).click();
    await page.locator('#new-key').waitFor();
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('cell', { name: 'api_key.created' }).waitFor();
    await page.getByRole('cell', { name: 'member.signed_up' }).waitFor();
    await page.getByLabel('Action').fill('api_key');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.locator('#audit-total').getByText('1 record.').waitFor();
    await page.screenshot({ path: `${SHOTS}/owner-audit.png`, fullPage: true });
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download CSV' }).click()]);
    const saved = join(dir, 'audit.csv');
    await download.saveAs(saved);
    const csv = readFileSync(saved, 'utf8');
    assert.match(csv, /^id,at,account_id,actor_type,actor_id,actor_email,action/);
    assert.match(csv, /api_key\.created/);
    assert.doesNotMatch(csv, /member\.signed_up/, 'the download keeps the filter');
  });
});
