/**
 * The two-way pages in a real browser (Debian's chromium, headless, playwright-core) against
 * `pigeon serve` on a free port of 127.0.0.1 with a throwaway SQLite file: the owner sets the
 * events URL and the help text, reads a conversation in the Inbox (searching it), manages the
 * opt-out list (a removal confirmed in the browser's dialog; a recipient's STOP not removable);
 * the operator assigns and releases a number and sees the unrouted messages. Screenshots go to
 * test-results/two-way/.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { logIn, openPage, signUp, startBrowserStack, type BrowserStack } from '../helpers/browser.ts';

const SHOTS = 'test-results/two-way';
const OWNER = { name: 'Two Way Ltd', email: 'owner@twoway.test', password: 'a long owner password' };
const OPERATOR = { email: 'ops@pigeon.test', password: 'a long operator password' };

describe('two-way pages in a browser', () => {
  let stack: BrowserStack;
  let base: string;
  let pigeon: BrowserStack['cli'];

  before(async () => {
    stack = await startBrowserStack({ shots: SHOTS, operator: OPERATOR });
    ({ base, cli: pigeon } = stack);
  });

  after(() => stack?.close());

  test('events URL, help text, inbox, opt-outs; the operator’s numbers and unrouted messages', async () => {
    const { page } = await openPage(stack.browser, { viewport: { width: 1280, height: 800 } });
    await page.goto(`${base}/dashboard/signup`);
    await signUp(page, base, OWNER);
    const accountId = pigeon<{ data: { id: string }[] }>('account', 'list', '--email', OWNER.email).data[0]!.id;

    // The operator assigns a number in the console.
    const { page: ops } = await openPage(stack.browser, { viewport: { width: 1280, height: 800 } });
    await ops.goto(`${base}/operator/login`);
    await logIn(ops, OPERATOR);
    await ops.getByRole('link', { name: 'Numbers' }).click();
    await ops.getByLabel('Account ID').fill(accountId);
    await ops.getByLabel('Number (E.164 or a short code)').fill('+447700900660');
    await ops.getByLabel('Label (optional)').fill('Support');
    await ops.getByRole('button', { name: 'Assign' }).click();
    await ops.getByText(`+447700900660 is assigned to ${accountId}.`).waitFor();
    await ops.screenshot({ path: `${SHOTS}/operator-numbers.png`, fullPage: true });

    // Settings → Numbers and events.
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('link', { name: 'Numbers and events' }).click();
    await page.getByText('+447700900660').first().waitFor();
    await page.getByLabel('URL').fill('https://127.0.0.1:9443/webhook');
    await page.getByRole('button', { name: 'Save' }).first().click();
    await page.getByText('The events URL was saved.').waitFor();
    await page.getByLabel('Help text').fill('Two Way Ltd: call us on 0800 000 000.');
    await page.getByRole('button', { name: 'Save' }).last().click();
    await page.getByText('The help text was saved.').waitFor();
    await page.screenshot({ path: `${SHOTS}/numbers-and-events.png`, fullPage: true });

    // Messages come in (the simulator, as the operator would try it).
    pigeon('simulate', 'inbound', '--from', '+447911000301', '--to', '+447700900660', '--message', 'Where is my parcel?');
    pigeon('simulate', 'inbound', '--from', '+447911000302', '--to', '+447700900660', '--message', 'STOP');
    pigeon('simulate', 'inbound', '--from', '+447911000303', '--to', '+447700900999', '--message', 'Wrong number?');

    await page.getByRole('link', { name: 'Inbox' }).click();
    await page.getByRole('link', { name: '+447911000301' }).waitFor();
    await page.getByLabel('Search by number or text').fill('parcel');
    await page.getByRole('button', { name: 'Search' }).click();
    assert.equal(await page.getByRole('link', { name: '+447911000302' }).count(), 0, 'the search keeps only the matching conversation');
    await page.getByRole('link', { name: '+447911000301' }).click();
    await page.getByText('Where is my parcel?').waitFor();
    await page.screenshot({ path: `${SHOTS}/conversation.png`, fullPage: true });

    // Opt-outs: the STOP is listed and cannot be removed; one added here is removed after a confirm.
    await page.getByRole('link', { name: 'Opt-outs' }).click();
    await page.getByText('Only their START lifts it').waitFor();
    await page.getByLabel('Phone (E.164)').fill('+447911000304');
    await page.getByRole('button', { name: 'Add' }).click();
    await page.getByText('+447911000304 is opted out.').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Remove +447911000302' }).count(), 0);
    await page.getByRole('button', { name: 'Remove +447911000304' }).click();
    await page.getByText('+447911000304 is off the list.').waitFor();
    await page.screenshot({ path: `${SHOTS}/opt-outs.png`, fullPage: true });

    // The operator sees the unrouted message, and releases the number.
    await ops.reload();
    await ops.getByText('Wrong number?').waitFor();
    await ops.getByRole('button', { name: 'Release +447700900660' }).click();
    await ops.getByText(`+447700900660 is released from ${accountId}.`).waitFor();
    assert.deepEqual(pigeon('number', 'list').data, []);
  });
});
