/**
 * The campaign composer and the campaign page through HTTP (Fastify inject): the preview (first
 * rows, invalid rows with line and reason, cost against the balance), a campaign larger than
 * BULK_MAX_MESSAGES in several batches debited once, a form posted twice making one campaign,
 * scheduling at a local time (DST gaps and repeated times refused) in the zone the owner picked,
 * cancel with refunds, the campaign page's deliveries per minute (chart data and table) and
 * failures by error code, the results CSV escaped; one file read per account and a bounded number
 * per process, a failure that is not the form's answered 500, and 100,000 rows through the
 * preview of a listening server. Contact lists as people have them: the phone numbers column by
 * its usual names or asked for (and remembered), national numbers read in a default country
 * (remembered, first guessed from the account's numbers), repeated numbers sent once unless every
 * row is asked for, the campaign's name, the optional opt-out line in segments and cost, the same
 * for XLSX, and the sample files of docs/campaign-files.md.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { harness, type Harness } from '../helpers/harness.ts';
import { csrfToken, dashboardLogIn, DashboardClient } from '../helpers/dashboard-client.ts';
import { addCredits, setAccountStatus } from '../../src/services/accounts/accounts.ts';
import { approveSenderId, registerSenderId } from '../../src/services/sender-ids/sender-ids.ts';
import { xlsxWorkbook } from '../helpers/xlsx.ts';
import { addOptOut } from '../../src/services/opt-outs/opt-outs.ts';
import { assignNumber } from '../../src/services/numbers/numbers.ts';
import { claimJobs } from '../../src/store/repositories/jobs.repository.ts';
import { dispatchJobs } from '../../src/services/messages/dispatch-messages.ts';
import { fileReads, xlsxReads } from '../../src/services/campaigns/file-reads.ts';
import { waitFor } from '../helpers/wait-for.ts';

const PASSWORD = 'correct horse battery';

function formKey(page: string): string {
  const m = /name="form_key" value="([^"]+)"/.exec(page);
  assert.ok(m, 'the composer carries a form key');
  return m[1]!;
}

function csv(text: string, filename = 'list.csv') {
  return [{ name: 'file', filename, type: 'text/csv', bytes: Buffer.from(text) }];
}

function xlsx(book: Buffer, filename = 'list.xlsx') {
  return [{ name: 'file', filename, type: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', bytes: Buffer.from(book) }];
}

/** The options of the phone numbers column select, as the page or a preview's out-of-band update holds them: [value, text, selected]. */
function columnSelect(body: string): [string, string, boolean][] {
  const select = /<select id="recipient-column"[^>]*>(.*?)<\/select>/s.exec(body)?.[1];
  assert.ok(select !== undefined, 'the phone numbers column select');
  return [...select.matchAll(/<option value="([^"]*)"( selected)?>([^<]*)<\/option>/g)].map((m) => [m[1]!, m[3]!, m[2] !== undefined]);
}

/** The country the composer's select starts on ('' for none). */
function selectedCountry(body: string): string {
  const select = /<select id="country"[^>]*>(.*?)<\/select>/s.exec(body)?.[1] ?? '';
  return /<option value="([^"]*)" selected>/.exec(select)?.[1] ?? '';
}

/**
 * A multipart form whose file stops after `head` until `resume()`: an upload still arriving, for
 * requests to overlap on the server. `payload` is the body to post.
 */
function uploadInProgress(fields: Record<string, string>, head: string, rest: string) {
  const boundary = `----pigeon${Math.random().toString(16).slice(2)}`;
  let resume!: () => void;
  const resumed = new Promise<void>((resolve) => (resume = resolve));
  async function* body() {
    for (const [k, v] of Object.entries(fields)) yield Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`);
    yield Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="list.csv"\r\nContent-Type: text/csv\r\n\r\n`);
    yield Buffer.from(head);
    await resumed;
    yield Buffer.from(rest);
    yield Buffer.from(`\r\n--${boundary}--\r\n`);
  }
  return { payload: Readable.from(body()), contentType: `multipart/form-data; boundary=${boundary}`, resume };
}

const cookieHeader = (client: DashboardClient) => [...client.cookies].map(([k, v]) => `${k}=${v}`).join('; ');

describe('dashboard: campaigns', () => {
  let h: Harness;
  let n = 0;
  before(async () => {
    h = await harness({ BULK_MAX_MESSAGES: '3' });
  });
  after(() => h.close());

  /** A signed-up owner with an approved Sender ID `Acme` and `credits`. */
  async function owner(credits: number) {
    n++;
    const client = new DashboardClient(h.app);
    const form = await client.get('/dashboard/signup');
    const email = `campaign${n}@example.com`;
    assert.equal((await client.post('/dashboard/signup', { name: 'Acme Ltd', email, password: PASSWORD }, form.body)).statusCode, 303);
    const row = await h.ctx.store.db.selectFrom('owners').selectAll().where('email', '=', email).executeTakeFirstOrThrow();
    const sender = await registerSenderId(h.ctx, row.account_id, 'Acme');
    await approveSenderId(h.ctx, sender.id);
    if (credits > 0) await addCredits(h.ctx, row.account_id, credits);
    return { client, accountId: row.account_id, ownerId: row.id };
  }

  async function compose(client: DashboardClient, fields: Record<string, string>, file: string, url = '/dashboard/campaigns') {
    const page = await client.get('/dashboard/campaigns/new');
    assert.equal(page.statusCode, 200);
    const key = formKey(page.body);
    const res = await client.postMultipart(url, { _csrf: csrfToken(page.body), form_key: key, sender: 'Acme', when: 'now', ...fields }, csv(file));
    return { res, key, page };
  }

  const balance = async (accountId: string) => Number((await h.ctx.store.db.selectFrom('accounts').select('credits').where('id', '=', accountId).executeTakeFirstOrThrow()).credits);
  const messages = (accountId: string) => h.ctx.store.db.selectFrom('messages').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
  const MINUTE = 60_000;
  /** What the page serves its chart: the JSON of `#chart-data`. */
  const chartData = (body: string) => JSON.parse(/<script type="application\/json" id="chart-data">(.*?)<\/script>/s.exec(body)?.[1] ?? 'null');
  /** The rows of the table captioned `caption`, as cell texts (tags stripped). */
  function tableRows(body: string, caption: string): string[][] {
    const table = new RegExp(`<caption>${caption.replace(/[()]/g, '\\$&')}</caption>.*?<tbody>(.*?)</tbody>`, 's').exec(body)?.[1];
    if (table === undefined) return [];
    return [...table.matchAll(/<tr>(.*?)<\/tr>/gs)].map((r) => [...r[1]!.matchAll(/<td[^>]*>(.*?)<\/td>/gs)].map((c) => c[1]!.replace(/<[^>]+>/g, '')));
  }
  /** Hands `n` due dispatch jobs to the simulator now, by the test clock. */
  async function dispatch(n: number) {
    const claimed = await claimJobs(h.ctx.store.db, 'dispatch', n, h.clock.now(), h.ctx.config.jobLeaseMs);
    assert.equal(claimed.length, n);
    await dispatchJobs(h.ctx, h.carrier, claimed);
  }

  test('the preview shows the first rows filled, every invalid row with its line and reason, and the cost against the balance', async () => {
    const { client } = await owner(2);
    const file = 'to;first_name\n+33612345678;Ana\nnot a number;Bob\n\n+33612345679;Zoë\n;Nobody\n+33612345670;Eve\n';
    const { res } = await compose(client, { template: 'Hi {{ First_Name }}, see you Monday' }, file, '/dashboard/campaigns/preview');
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.body, /The file has 5 rows \(UTF-8, separated by “;”\)/);
    assert.match(res.body, /Hi Ana, see you Monday/);
    assert.match(res.body, /Hi Zoë, see you Monday/);
    assert.match(res.body, /<strong>3 messages<\/strong> to send, <strong>2 rows<\/strong> that cannot be sent/);
    // Line numbers count the header and the empty line.
    assert.match(res.body, /<td data-label="Line">3<\/td><td data-label="To">not a number<\/td><td data-label="Reason">`to` is not a valid E.164 number/);
    assert.match(res.body, /<td data-label="Line">6<\/td><td data-label="To"><span class="muted">\(empty\)<\/span><\/td><td data-label="Reason">The `to` cell is empty./);
    assert.match(res.body, /data-credits="3"/);
    assert.match(res.body, /data-balance="2"/);
    assert.match(res.body, /The balance does not cover this campaign: it needs 1 more credit/);
    assert.match(res.body, /GSM-7|UCS-2/);

    const unknown = await compose(client, { template: 'Hi {{surname}}' }, file, '/dashboard/campaigns/preview');
    assert.match(unknown.res.body, /The template names \{\{surname\}\}, which the file has no column for/);
    const noTo = await compose(client, { template: 'Hi' }, 'name\n+33612345678\n', '/dashboard/campaigns/preview');
    assert.match(noTo.res.body, /Which column holds the phone numbers\? None is named to, phone, phone number/);
  });

  test('a campaign over BULK_MAX_MESSAGES becomes several batches under one campaign, debited once; the same form again makes nothing', async () => {
    const { client, accountId } = await owner(20);
    const rows = Array.from({ length: 7 }, (_, i) => `+3361234567${i},N${i}`).join('\n');
    const { res, key, page } = await compose(client, { template: 'Hello {{name}}' }, `to,name\n${rows}\nbad,X\n`);
    // Without script the composer stays a plain form: it posts the file here and follows the redirect.
    assert.match(page.body, /<form method="post" action="\/dashboard\/campaigns" enctype="multipart\/form-data" id="composer"/);
    assert.match(page.body, /<button type="submit" id="send-campaign">Send campaign<\/button> <span id="send-status" role="status" aria-live="polite"><\/span>/);
    assert.equal(res.statusCode, 303, res.body);
    const location = String(res.headers.location);
    assert.match(location, /^\/dashboard\/campaigns\/cmp_/);
    const stored = await messages(accountId);
    assert.equal(stored.length, 7);
    assert.equal(new Set(stored.map((m) => m.batch_id)).size, 3, 'batches of at most 3');
    assert.equal(await balance(accountId), 13);
    const ledger = await h.ctx.store.db.selectFrom('credit_ledger').selectAll().where('account_id', '=', accountId).where('kind', '=', 'debit').execute();
    assert.equal(ledger.length, 1, 'one debit for the whole campaign');
    assert.equal(Number(ledger[0]!.amount), -7);

    // A reload or a double click posts the same form (same key) again: the same campaign, nothing new.
    const again = await client.postMultipart('/dashboard/campaigns', { _csrf: csrfToken(page.body), form_key: key, sender: 'Acme', when: 'now', template: 'Hello {{name}}' }, csv(`to,name\n${rows}\n`));
    assert.equal(again.statusCode, 303);
    assert.equal(again.headers.location, location);
    assert.equal((await messages(accountId)).length, 7);
    assert.equal(await balance(accountId), 13);

    const campaign = await client.get(location);
    assert.equal(campaign.statusCode, 200);
    assert.match(campaign.body, /8 rows: 7 messages, 1 invalid row not sent/);
    assert.match(campaign.body, /data-status-count="pending">7</);
    await h.workers.drain();
    h.clock.advance(5_000);
    await h.workers.drain();
    const progress = await client.get(`${location}/progress`);
    assert.equal(progress.statusCode, 286, 'finished: htmx stops polling');
    assert.match(progress.body, /data-status-count="delivered">7</);
  });

  test('recipients who opted out: named in the preview apart from invalid rows, not in the cost; the send skips them (and one who opted out after the preview), storing and debiting only the others', async () => {
    const { client, accountId } = await owner(20);
    await addOptOut(h.ctx, accountId, '+33612345672', 'api');
    const file = 'to,name\n+33612345671,Ana\n+33612345672,Bob\nbad,Cy\n+33 6 12 34 56 73,Dee\n+33612345674,Eve\n+33612345675,Flo\n';
    const { res } = await compose(client, { template: 'Hello {{name}}' }, file, '/dashboard/campaigns/preview');
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.body, /<strong>4 messages<\/strong> to send, <strong>1 row<\/strong> that cannot be sent \(listed below, skipped\), <strong>1 row<\/strong> to recipients who opted out/);
    assert.match(res.body, /<div id="opted-out-rows">.*<td data-label="Line">3<\/td><td data-label="To">\+33612345672<\/td><td data-label="Status">opted out<\/td>/s);
    const invalidRows = /<div id="invalid-rows">(.*?)<\/div>/s.exec(res.body)?.[1] ?? '';
    assert.doesNotMatch(invalidRows, /\+33612345672/, 'not among the invalid rows');
    assert.doesNotMatch(res.body, /Hello Bob/, 'not previewed');
    assert.match(res.body, /data-credits="4"/);

    // Between the preview and the send, Dee (written with spaces in the file) opts out too.
    await addOptOut(h.ctx, accountId, '+33612345673', 'api');
    const sent = await compose(client, { template: 'Hello {{name}}' }, file);
    assert.equal(sent.res.statusCode, 303, sent.res.body);
    const stored = await messages(accountId);
    assert.deepEqual(stored.map((m) => m.recipient).sort(), ['+33612345671', '+33612345674', '+33612345675']);
    assert.equal(await balance(accountId), 17, 'three credits debited, none for the opted-out');
    const debits = await h.ctx.store.db.selectFrom('credit_ledger').select('amount').where('account_id', '=', accountId).where('kind', '=', 'debit').execute();
    assert.deepEqual(debits.map((d) => Number(d.amount)), [-3]);
    const location = String(sent.res.headers.location);
    const page = await client.get(location);
    assert.match(page.body, /6 rows: 3 messages, 1 invalid row not sent, <span id="opted-out-skipped">2 rows to recipients who opted out skipped<\/span>/);
    const list = await client.get('/dashboard/campaigns');
    assert.match(list.body, /<th[^>]*>Skipped \(opted out\)<\/th>/);
    assert.match(list.body, new RegExp(`${location.split('/').pop()}</code></a></td><td[^>]*>Acme</td><td[^>]*>3</td><td[^>]*>2</td>`));
  });

  test('opt-outs are looked up in batches as the file streams: every one found, however far into the file', async () => {
    const { client, accountId } = await owner(0);
    const phone = (i: number) => `+336${String(10_000_000 + i)}`;
    const stopped = [0, 999, 1000, 2001, 2499];
    for (const i of stopped) await addOptOut(h.ctx, accountId, phone(i), 'api');
    const rows = Array.from({ length: 2500 }, (_, i) => phone(i)).join('\n');
    const { res } = await compose(client, { template: 'Hi' }, `to\n${rows}\n`, '/dashboard/campaigns/preview');
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.body, /<strong>2,495 messages<\/strong> to send, <strong>5 rows<\/strong> to recipients who opted out/);
    assert.match(res.body, /data-credits="2495"/);
    const listed = [...res.body.matchAll(/<td data-label="Line">(\d+)<\/td><td data-label="To">([^<]+)<\/td><td data-label="Status">opted out/g)].map((m) => [Number(m[1]), m[2]]);
    assert.deepEqual(listed, stopped.map((i) => [i + 2, phone(i)]));
  });

  test('a double click (the same form posted twice at once) makes one campaign and one debit', async () => {
    const { client, accountId } = await owner(20);
    const page = await client.get('/dashboard/campaigns/new');
    const fields = { _csrf: csrfToken(page.body), form_key: formKey(page.body), sender: 'Acme', when: 'now', template: 'Hello {{name}}' };
    const file = csv('to,name\n+33612345678,Ana\n+33612345679,Bob\n+33612345670,Eve\n+33612345671,Max\n');
    const [a, b] = await Promise.all([client.postMultipart('/dashboard/campaigns', fields, file), client.postMultipart('/dashboard/campaigns', fields, file)]);
    assert.equal(a.statusCode, 303, a.body);
    assert.equal(b.statusCode, 303, b.body);
    assert.equal(a.headers.location, b.headers.location);
    assert.equal((await messages(accountId)).length, 4);
    assert.equal(await balance(accountId), 16);
    assert.equal((await h.ctx.store.db.selectFrom('campaigns').selectAll().where('account_id', '=', accountId).execute()).length, 1);
  });

  test('a forged form (no token) and a suspended account send nothing', async () => {
    const { client, accountId } = await owner(10);
    const page = await client.get('/dashboard/campaigns/new');
    const fields = { form_key: formKey(page.body), sender: 'Acme', when: 'now', template: 'Hi' };
    const forged = await client.postMultipart('/dashboard/campaigns', fields, csv('to\n+33612345678\n'));
    assert.equal(forged.statusCode, 403);
    await setAccountStatus(h.ctx, accountId, 'suspended');
    const suspended = await client.postMultipart('/dashboard/campaigns', { _csrf: csrfToken(page.body), ...fields }, csv('to\n+33612345678\n'));
    assert.equal(suspended.statusCode, 403, suspended.body);
    assert.match(suspended.body, /The account is suspended/);
    assert.equal((await messages(accountId)).length, 0);
    assert.equal(await balance(accountId), 10);
  });

  test('an XLSX file is read from its first sheet, rows numbered as in the sheet', async () => {
    const { client, accountId } = await owner(10);
    const page = await client.get('/dashboard/campaigns/new');
    const book = xlsxWorkbook(new Map<number, (string | number)[]>([[1, ['to', 'name']], [2, ['+33612345678', 'Ana']], [4, [33612345679, 'Bob']]]));
    const fields = { _csrf: csrfToken(page.body), form_key: formKey(page.body), sender: 'Acme', when: 'now', template: 'Hi {{name}}' };
    const file = [{ name: 'file', filename: 'list.xlsx', type: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', bytes: book }];
    const preview = await client.postMultipart('/dashboard/campaigns/preview', fields, file);
    assert.match(preview.body, /The file has 2 rows \(XLSX, first sheet\)/);
    assert.match(preview.body, /<td data-label="Line">4<\/td><td data-label="To">33612345679<\/td><td data-label="Reason">`to` is not a valid E.164 number/);
    const sent = await client.postMultipart('/dashboard/campaigns', fields, file);
    assert.equal(sent.statusCode, 303, sent.body);
    assert.deepEqual((await messages(accountId)).map((m) => m.body), ['Hi Ana']);
    const old = await client.postMultipart('/dashboard/campaigns/preview', fields, [{ name: 'file', filename: 'list.xls', type: 'application/vnd.ms-excel', bytes: Buffer.from('x') }]);
    assert.match(old.body, /save the sheet as “Excel Workbook \(.xlsx\)” or as “CSV UTF-8”/);
  });

  test('a campaign the balance does not cover is refused whole: nothing stored, nothing debited', async () => {
    const { client, accountId } = await owner(5);
    const rows = Array.from({ length: 7 }, (_, i) => `+3361234567${i}`).join('\n');
    const { res } = await compose(client, { template: 'Hello' }, `to\n${rows}\n`);
    assert.equal(res.statusCode, 422, res.body);
    assert.match(res.body, /Sending needs 7 credits; the balance is 5 credits/);
    assert.match(res.body, /Nothing was sent/);
    assert.equal((await messages(accountId)).length, 0);
    assert.equal(await balance(accountId), 5);
    assert.equal((await h.ctx.store.db.selectFrom('campaigns').selectAll().where('account_id', '=', accountId).execute()).length, 0);
  });

  test('scheduled at a local time in the owner’s zone (DST gaps refused, the zone remembered), then canceled with refunds', async () => {
    const { client, accountId, ownerId } = await owner(10);
    const file = 'to,name\n+33612345678,Ana\n+33612345679,Bob\n+33612345670,Eve\n+33612345671,Max\n';
    // 2026-03-29 02:30 does not exist in Paris: the clocks go from 02:00 to 03:00.
    const gap = await compose(client, { template: 'Hi {{name}}', when: 'later', send_at_local: '2026-03-29T02:30', time_zone: 'Europe/Paris' }, file);
    assert.equal(gap.res.statusCode, 400);
    assert.match(gap.res.body, /2026-03-29 02:30 does not exist in Europe\/Paris: the clocks skip it for daylight saving time/);
    assert.equal((await messages(accountId)).length, 0);

    const { res } = await compose(client, { template: 'Hi {{name}}', when: 'later', send_at_local: '2026-03-02T09:00', time_zone: 'Europe/Paris' }, file);
    assert.equal(res.statusCode, 303, res.body);
    const stored = await messages(accountId);
    assert.equal(stored.length, 4);
    assert.ok(stored.every((m) => m.status === 'scheduled' && Number(m.send_at) === Date.parse('2026-03-02T08:00:00Z')));
    assert.equal(await balance(accountId), 6);
    const ownerRow = await h.ctx.store.db.selectFrom('owners').selectAll().where('id', '=', ownerId).executeTakeFirstOrThrow();
    assert.equal(ownerRow.time_zone, 'Europe/Paris');
    assert.match((await client.get('/dashboard/campaigns/new')).body, /<option value="Europe\/Paris" selected>/);

    const location = String(res.headers.location);
    const page = await client.get(location);
    assert.match(page.body, /2 Mar 2026, 09:00 Europe\/Paris/);
    assert.match(page.body, /id="cancel-campaign"/);
    const cancel = await client.post(`${location}/cancel`, {}, page.body);
    assert.equal(cancel.statusCode, 200, cancel.body);
    assert.match(cancel.body, /4 scheduled messages canceled; 4 credits refunded/);
    assert.deepEqual(tableRows(cancel.body, 'Messages by status'), [['Canceled', '4']], 'the page counts the canceled messages, none left scheduled');
    assert.doesNotMatch(cancel.body, /id="cancel-campaign"/);
    assert.match(cancel.body, /id="campaign-credits">4 debited, 4 refunded for canceled messages</, 'the campaign shows its refund beside its debit');
    assert.equal(await balance(accountId), 10);
    assert.ok((await messages(accountId)).every((m) => m.status === 'canceled'));
    const twice = await client.post(`${location}/cancel`, {}, page.body);
    assert.equal(twice.statusCode, 409);
    assert.match(twice.body, /Nothing of this campaign is still scheduled/);
  });

  test('a local time that the clocks repeat (02:30 on the night they go back) is refused with the reason, nothing stored or debited', async () => {
    const saved = h.clock.ms;
    // Within the 35 days a campaign may be scheduled ahead of 2026-10-25.
    h.clock.ms = Date.parse('2026-10-20T12:00:00Z');
    try {
      const { client, accountId } = await owner(10);
      const file = 'to,name\n+33612345678,Ana\n+33612345679,Bob\n';
      const repeated = await compose(client, { template: 'Hi {{name}}', when: 'later', send_at_local: '2026-10-25T02:30', time_zone: 'Europe/Paris' }, file);
      assert.equal(repeated.res.statusCode, 400, repeated.res.body);
      assert.match(repeated.res.body, /2026-10-25 02:30 happens twice in Europe\/Paris: the clocks go back for daylight saving time\. Choose another time\. Nothing was sent\./);
      assert.match(repeated.res.body, /<input id="send-at" name="send_at_local" type="datetime-local" value="2026-10-25T02:30"/, 'the form kept as filled in, to pick another time');
      assert.equal((await messages(accountId)).length, 0);
      assert.equal(await balance(accountId), 10);
      assert.equal((await h.ctx.store.db.selectFrom('campaigns').selectAll().where('account_id', '=', accountId).execute()).length, 0);
      // An hour later is once only: accepted, at 03:30 CET (02:30 UTC).
      const after = await compose(client, { template: 'Hi {{name}}', when: 'later', send_at_local: '2026-10-25T03:30', time_zone: 'Europe/Paris' }, file);
      assert.equal(after.res.statusCode, 303, after.res.body);
      assert.ok((await messages(accountId)).every((m) => Number(m.send_at) === Date.parse('2026-10-25T02:30:00Z')));
      await client.post(`${String(after.res.headers.location)}/cancel`, {}, (await client.get(String(after.res.headers.location))).body);
    } finally {
      h.clock.ms = saved;
    }
  });

  test('the campaign page serves the deliveries per minute, for its chart and its table, from the clock times of the receipts', async () => {
    const { client } = await owner(10);
    await h.workers.drain();
    // The simulator's receipt comes 1 s after dispatch (SIM_DELIVERY_DELAY_MS): dispatched 10 s
    // into a minute, two are delivered in it, three in the next, one two minutes later.
    const start = (Math.floor(h.clock.now() / MINUTE) + 2) * MINUTE;
    h.clock.ms = start + 10_000;
    const rows = Array.from({ length: 6 }, (_, i) => `+3361234560${i}`).join('\n');
    const { res } = await compose(client, { template: 'Hi' }, `to\n${rows}\n`);
    assert.equal(res.statusCode, 303, res.body);
    const location = String(res.headers.location);
    const before = await client.get(location);
    assert.deepEqual(chartData(before.body), { x: 'Minute', days: [], counts: { delivered: [] } }, 'nothing delivered yet: nothing to draw');
    assert.doesNotMatch(before.body, /Delivered per minute \(/);
    await dispatch(2);
    h.clock.ms = start + MINUTE + 10_000;
    await dispatch(3);
    h.clock.ms = start + 3 * MINUTE + 10_000;
    await dispatch(1);
    h.clock.advance(5_000);
    await h.workers.drain();

    const page = await client.get(location);
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /data-status-count="delivered">6</);
    // A zero minute on either side, so that even one minute draws a line; minutes without deliveries are left out.
    const expected = { x: 'Minute', days: [start - MINUTE, start, start + MINUTE, start + 3 * MINUTE, start + 4 * MINUTE], counts: { delivered: [0, 2, 3, 1, 0] } };
    assert.deepEqual(chartData(page.body), expected);
    assert.match(page.body, /<div id="chart" aria-label="Delivered per minute" role="img"><\/div>/, 'the element the chart is drawn in');
    const minute = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
    const table = [
      [minute(start), '2'],
      [minute(start + MINUTE), '3'],
      [minute(start + 3 * MINUTE), '1'],
    ];
    assert.deepEqual(tableRows(page.body, 'Delivered per minute (last 60 minutes with deliveries)'), table);
    const progress = await client.get(`${location}/progress`);
    assert.equal(progress.statusCode, 286, 'every message delivered: the polling stops');
    assert.deepEqual(chartData(progress.body), expected, 'the polled fragment carries the same data');
    assert.deepEqual(tableRows(progress.body, 'Delivered per minute (last 60 minutes with deliveries)'), table);
  });

  test('the campaign page groups its failures by error code, with counts, most frequent first', async () => {
    const { client } = await owner(10);
    // 0000: sent, then failed subscriber_unreachable; 2222: carrier_rejected at submit; 1111: never a receipt.
    const file = 'to\n+33612340000\n+33612345678\n+33612350000\n+33612342222\n+33612341111\n+33612360000\n';
    const { res } = await compose(client, { template: 'Hi' }, file);
    assert.equal(res.statusCode, 303, res.body);
    const location = String(res.headers.location);
    assert.match((await client.get(location)).body, /No failures\./);
    await h.workers.drain();
    h.clock.advance(2_000);
    await h.workers.drain();
    const failures = [
      ['subscriber_unreachable', '3'],
      ['carrier_rejected', '1'],
    ];
    const page = await client.get(location);
    assert.deepEqual(tableRows(page.body, 'Failures by error code'), failures);
    assert.deepEqual(tableRows(page.body, 'Messages by status'), [
      ['Sent', '1'],
      ['Delivered', '1'],
      ['Failed', '4'],
    ]);
    const progress = await client.get(`${location}/progress`);
    assert.equal(progress.statusCode, 200, 'one message still sent: the page keeps polling');
    assert.deepEqual(tableRows(progress.body, 'Failures by error code'), failures);
  });

  test('the results CSV escapes every cell that starts with =, +, - or @ (an error text as a carrier might word it)', async () => {
    const { client, accountId } = await owner(10);
    const { res } = await compose(client, { template: '-1+1 {{name}}' }, 'to,name\n+33612342222,=A\n+33612352222,@B\n+33612362222,+C\n+33612372222,-D\n');
    assert.equal(res.statusCode, 303, res.body);
    await h.workers.drain();
    // Pigeon's own error texts start with a letter; a carrier's need not.
    const texts = ['=HYPERLINK("https://example.com/x","open")', '+SUM(1,2)', '-2+3', '@cmd'];
    const stored = await messages(accountId);
    assert.ok(stored.every((m) => m.status === 'failed' && m.error_code === 'carrier_rejected'));
    for (const [i, m] of stored.entries()) await h.ctx.store.db.updateTable('messages').set({ error_message: texts[i]! }).where('id', '=', m.id).execute();
    const download = await client.get(`${String(res.headers.location)}/results.csv`);
    assert.equal(download.statusCode, 200);
    const cells = new Map(
      download.body
        .trimEnd()
        .split('\r\n')
        .slice(1)
        .map((line) => [line.split(',')[0]!, line]),
    );
    assert.equal(cells.size, 4);
    const escaped = ['"\'=HYPERLINK(""https://example.com/x"",""open"")"', '"\'+SUM(1,2)"', "'-2+3", "'@cmd"];
    for (const [i, m] of stored.entries()) {
      const line = cells.get(m.id)!;
      assert.ok(line.includes(`,'${m.recipient},failed,1,GSM-7,carrier_rejected,${escaped[i]},`), line);
    }
  });

  test('a newer preview replaces the account’s preview in progress, which stops and says so; one file read per account at a time', async () => {
    const { client } = await owner(0);
    const page = await client.get('/dashboard/campaigns/new');
    const fields = { _csrf: csrfToken(page.body), form_key: formKey(page.body), sender: 'Acme', when: 'now', template: 'Hi' };
    const rows = Array.from({ length: 2000 }, (_, i) => `+336${10_000_000 + i}`);
    const slow = uploadInProgress(fields, `to\n${rows.slice(0, 1000).join('\n')}\n`, `${rows.slice(1000).join('\n')}\n`);
    const older = h.app.inject({ method: 'POST', url: '/dashboard/campaigns/preview', headers: { cookie: cookieHeader(client), 'content-type': slow.contentType }, payload: slow.payload });
    // The older preview is reading its file, half of it arrived.
    await waitFor(() => fileReads.running === 1, { message: 'the first preview to be reading its file' });
    const newer = await client.postMultipart('/dashboard/campaigns/preview', { ...fields, template: 'Hello' }, csv(`to\n${rows.join('\n')}\n`));
    assert.equal(newer.statusCode, 200, newer.body);
    assert.match(newer.body, /<strong>2,000 messages<\/strong> to send/);
    slow.resume();
    const replaced = await older;
    assert.equal(replaced.statusCode, 200);
    assert.match(replaced.body, /A newer preview of this campaign replaced this one/);
    assert.doesNotMatch(replaced.body, /campaign-preview/);
    assert.equal(fileReads.running, 0);
  });

  test('the process reads a bounded number of files at once: past its queue, a preview says the server is busy (Retry-After)', async () => {
    const a = await owner(0);
    const b = await owner(0);
    const limits = { concurrency: fileReads.concurrency, maxWaiting: fileReads.maxWaiting };
    const xlsxLimits = { concurrency: xlsxReads.concurrency, maxWaiting: xlsxReads.maxWaiting };
    fileReads.concurrency = 1;
    fileReads.maxWaiting = 0;
    try {
      const pageA = await a.client.get('/dashboard/campaigns/new');
      const fieldsA = { _csrf: csrfToken(pageA.body), form_key: formKey(pageA.body), sender: 'Acme', when: 'now', template: 'Hi' };
      const slow = uploadInProgress(fieldsA, 'to\n+33612345678\n', '+33612345679\n');
      const first = h.app.inject({ method: 'POST', url: '/dashboard/campaigns/preview', headers: { cookie: cookieHeader(a.client), 'content-type': slow.contentType }, payload: slow.payload });
      await waitFor(() => fileReads.running === 1, { message: 'the first preview to be reading its file' });
      const { res } = await compose(b.client, { template: 'Hi' }, 'to\n+33612345678\n', '/dashboard/campaigns/preview');
      assert.equal(res.statusCode, 200, 'the reason is the preview');
      assert.match(res.body, /The server is checking too many campaign files at the moment; try again in a minute/);
      assert.equal(res.headers['retry-after'], '30');
      slow.resume();
      assert.match((await first).body, /<strong>2 messages<\/strong> to send/);
      // A send refused for the same reason sends nothing and says so.
      fileReads.concurrency = 0;
      const send = await compose(b.client, { template: 'Hi' }, 'to\n+33612345678\n');
      assert.equal(send.res.statusCode, 503);
      assert.match(send.res.body, /checking too many campaign files.*Nothing was sent/s);
      // One XLSX workbook is parsed at a time per process; past the queue, the same answer.
      Object.assign(fileReads, limits);
      Object.assign(xlsxReads, { concurrency: 0, maxWaiting: 0 });
      const book = xlsxWorkbook(new Map([[1, ['to']], [2, ['+33612345678']]]));
      const page = await b.client.get('/dashboard/campaigns/new');
      const xlsx = await b.client.postMultipart(
        '/dashboard/campaigns/preview',
        { _csrf: csrfToken(page.body), form_key: formKey(page.body), sender: 'Acme', when: 'now', template: 'Hi' },
        [{ name: 'file', filename: 'list.xlsx', type: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', bytes: book }],
      );
      assert.match(xlsx.body, /reading too many spreadsheets at the moment/);
    } finally {
      Object.assign(fileReads, limits);
      Object.assign(xlsxReads, xlsxLimits);
    }
  });

  test('a failure that is not the form’s (the database’s, while the opt-outs are looked up) is a 500, not a refusal of the form; a body cut short is the form’s', async () => {
    const { client } = await owner(10);
    const db = h.ctx.store.db;
    await db.schema.alterTable('opt_outs').renameTo('opt_outs_away').execute();
    try {
      const preview = await compose(client, { template: 'Hi' }, 'to\n+33612345678\n', '/dashboard/campaigns/preview');
      assert.equal(preview.res.statusCode, 500, preview.res.body);
      assert.match(preview.res.body, /Something went wrong on our side; it has been logged/);
      assert.doesNotMatch(preview.res.body, /could not be read/);
      const send = await compose(client, { template: 'Hi' }, 'to\n+33612345678\n');
      assert.equal(send.res.statusCode, 500, send.res.body);
    } finally {
      await db.schema.alterTable('opt_outs_away').renameTo('opt_outs').execute();
    }
    const page = await client.get('/dashboard/campaigns/new');
    const boundary = '----pigeoncut';
    const cut = await h.app.inject({
      method: 'POST',
      url: '/dashboard/campaigns/preview',
      headers: { cookie: cookieHeader(client), 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: `--${boundary}\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${csrfToken(page.body)}\r\n--${boundary}\r\nContent-Disposition: form-data; name="sender"\r\n\r\nAcme\r\n--${boundary}\r\nContent-Disposition: form-data; name="template"\r\n\r\nHi\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="list.csv"\r\n\r\nto\n+3361234`,
    });
    assert.equal(cut.statusCode, 200);
    assert.match(cut.body, /The form could not be read; please try again/);
  });

  test('the time zone the owner picks is stored at once and is the composer’s default from then on; until then the browser’s', async () => {
    const { client, ownerId } = await owner(0);
    const zoneOf = async () => (await h.ctx.store.db.selectFrom('owners').select('time_zone').where('id', '=', ownerId).executeTakeFirstOrThrow()).time_zone;
    const first = await client.get('/dashboard/campaigns/new');
    // No zone stored: the page's script selects the browser's.
    assert.match(first.body, /<select id="time-zone" name="time_zone" data-save-url="\/dashboard\/campaigns\/time-zone" data-browser-zone>/);
    assert.equal(await zoneOf(), null);

    const picked = await client.post('/dashboard/campaigns/time-zone', { time_zone: 'America/New_York' }, first.body);
    assert.equal(picked.statusCode, 204, picked.body);
    assert.equal(await zoneOf(), 'America/New_York');
    const next = await client.get('/dashboard/campaigns/new');
    assert.match(next.body, /<option value="America\/New_York" selected>/);
    assert.doesNotMatch(next.body, /data-browser-zone/);

    const unknown = await client.post('/dashboard/campaigns/time-zone', { time_zone: 'Mars/Olympus_Mons' }, first.body);
    assert.equal(unknown.statusCode, 400);
    assert.match(unknown.body, /Mars\/Olympus_Mons is not a known time zone/);
    const forged = await client.post('/dashboard/campaigns/time-zone', { time_zone: 'Asia/Tokyo' });
    assert.equal(forged.statusCode, 403);
    assert.equal(await zoneOf(), 'America/New_York');
  });

  test('100,000 rows through the HTTP preview of a listening server: the counts and cost are right, and other requests are answered while it reads', async (t) => {
    const { client } = await owner(0);
    const page = await client.get('/dashboard/campaigns/new');
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (h.app.server.address() as AddressInfo).port;
    // Every 100th row is not a number; every 1,000th name is long enough for a second segment.
    const rows: string[] = [];
    for (let i = 0; i < 100_000; i++) rows.push(`${i % 100 === 99 ? 'not-a-number' : `+336${10_000_000 + i}`},${i % 1000 === 0 ? 'x'.repeat(200) : `Name${i}`}`);
    const boundary = '----pigeonlarge';
    const fields = { _csrf: csrfToken(page.body), form_key: formKey(page.body), sender: 'Acme', when: 'now', template: 'Hi {{name}}' };
    const head = Buffer.from(
      `${Object.entries(fields)
        .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
        .join('')}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="list.csv"\r\nContent-Type: text/csv\r\n\r\nto,name\n${rows.slice(0, 50_000).join('\n')}\n`,
    );
    const tail = Buffer.from(`${rows.slice(50_000).join('\n')}\n\r\n--${boundary}--\r\n`);
    // fetch loads its HTTP client on first use, at once: not something to count against the preview.
    assert.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200);
    let received: IncomingMessage | undefined;
    h.app.server.once('request', (req: IncomingMessage) => (received = req));
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const preview = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/dashboard/campaigns/preview',
          headers: { cookie: cookieHeader(client), 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': head.length + tail.length },
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.write(head);
      // Half the file is sent. Once the server has taken it in (and, streaming, checked nearly all of
      // its 50,000 rows) and is still reading the file, another request must be answered; then the
      // rest follows.
      void waitFor(() => fileReads.running === 1 && received !== undefined && received.socket.bytesRead >= head.length, { message: 'the server to have read half the file' })
        .then(async () => {
          const health = await fetch(`http://127.0.0.1:${port}/health`);
          assert.equal(health.status, 200);
          req.end(tail);
        })
        .catch(reject);
    });
    let answered = false;
    const over = () => (answered = true);
    preview.then(over, over);
    // All along, from the first bytes of the upload to the preview's answer, cheap requests are answered.
    let healthMeanwhile = 0;
    while (!answered) {
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      assert.equal(res.status, 200);
      if (!answered) healthMeanwhile++;
    }
    const { status, body } = await preview;
    delay.disable();
    t.diagnostic(`health answered ${healthMeanwhile} times while the preview ran; event loop delay max ${(delay.max / 1e6).toFixed(0)} ms`);
    assert.equal(status, 200, body);
    assert.ok(healthMeanwhile >= 1, 'requests were answered while the file was read');
    assert.match(body, /The file has 100,000 rows \(UTF-8, separated by “,”\): <strong>99,000 messages<\/strong> to send, <strong>1,000 rows<\/strong> that cannot be sent/);
    assert.match(body, /data-credits="99100"/);
    assert.match(body, /<td data-label="Line">101<\/td><td data-label="To">not-a-number<\/td>/);
    assert.match(body, /…and 500 more rows; the first 500 are listed/);
  });

  test('the results CSV lists every message, cells that a spreadsheet would run escaped; another account sees nothing', async () => {
    const { client } = await owner(10);
    const { res } = await compose(client, { template: '=cmd {{name}}' }, 'to,name\n+33612345678,"@x, ""y"""\n');
    assert.equal(res.statusCode, 303, res.body);
    const location = String(res.headers.location);
    const download = await client.get(`${location}/results.csv`);
    assert.equal(download.statusCode, 200);
    assert.match(String(download.headers['content-type']), /^text\/csv/);
    assert.match(String(download.headers['content-disposition']), /^attachment; filename="cmp_[a-z0-9]+-results\.csv"$/);
    const lines = download.body.trimEnd().split('\r\n');
    assert.equal(lines.length, 2);
    assert.equal(lines[0], 'message_id,batch_id,to,status,segments,encoding,error_code,error_message,created_at,send_at,sent_at,delivered_at,clicks,campaign,category,held_until');
    assert.match(lines[1]!, /^msg_[a-z0-9]+,bat_[a-z0-9]+,'\+33612345678,pending,1,GSM-7,,,2026-/);

    const other = await owner(0);
    assert.equal((await other.client.get(location)).statusCode, 404);
    assert.equal((await other.client.get(`${location}/results.csv`)).statusCode, 404);
  });
  /** Posts the composer (a fresh form) with `fields`, to preview or to send. */
  async function post(client: DashboardClient, fields: Record<string, string>, file: ReturnType<typeof csv>, url = '/dashboard/campaigns') {
    const page = await client.get('/dashboard/campaigns/new');
    return client.postMultipart(url, { _csrf: csrfToken(page.body), form_key: formKey(page.body), sender: 'Acme', when: 'now', template: 'Hi', ...fields }, file);
  }
  const PREVIEW = '/dashboard/campaigns/preview';
  const previewTo = (body: string) => tableRows(body, `The first ${(/<caption>The first (\d+ messages?)<\/caption>/.exec(body) ?? [])[1]}`).map((r) => r[1]!);

  test('the recipient column is found by its usual names; with none or several the preview asks which, the select filled from the header; the choice is used and kept for the next upload', async () => {
    const { client, accountId } = await owner(10);
    const found = await post(client, { template: 'Hi {{first_name}}' }, csv('First Name,Phone Number\nAnn,+447400123401\n'), PREVIEW);
    assert.match(found.body, /Phone numbers from the column <strong>“Phone Number”<\/strong> \(found by its name\)/);
    assert.match(found.body, /Hi Ann/);
    assert.deepEqual(columnSelect(found.body), [['', 'Phone Number (found by its name)', true], ['First Name', 'First Name', false], ['Phone Number', 'Phone Number', false]]);
    for (const header of ['MOBILE', 'cell', 'MSISDN', 'mobile_number', 'Recipient', 'number']) {
      const res = await post(client, {}, csv(`Name,${header}\nAnn,+447400123401\n`), PREVIEW);
      assert.match(res.body, /<strong>1 message<\/strong> to send/, header);
    }

    // Two candidates: nothing is guessed; the preview asks, and the select offers the file's columns.
    const file = csv('Name,Phone,Mobile\nAnn,+447400123401,+447400123402\nBob,+447400123403,+447400123404\n');
    const asked = await post(client, {}, file, PREVIEW);
    assert.equal(asked.statusCode, 200);
    assert.match(asked.body, /Which column holds the phone numbers\? Several could: Phone, Mobile\. Choose it in “Phone numbers column” above/);
    assert.doesNotMatch(asked.body, /campaign-preview/);
    assert.deepEqual(columnSelect(asked.body), [['', 'Choose the column…', true], ['Name', 'Name', false], ['Phone', 'Phone', false], ['Mobile', 'Mobile', false]]);
    const none = await post(client, {}, csv('Name,Contact\nAnn,+447400123401\n'), PREVIEW);
    assert.match(none.body, /Which column holds the phone numbers\? None is named to, phone, phone number, mobile, mobile number or the like; the file has: Name, Contact/);

    const chosen = await post(client, { recipient_column: 'Mobile' }, file, PREVIEW);
    assert.deepEqual(previewTo(chosen.body), ['+447400123402', '+447400123404']);
    assert.match(chosen.body, /column <strong>“Mobile”<\/strong>;/);
    assert.ok(columnSelect(chosen.body).some(([v, , selected]) => v === 'Mobile' && selected));

    // Sent without script while the column is unclear: the form comes back asking, nothing sent.
    const unclear = await post(client, {}, file);
    assert.equal(unclear.statusCode, 422);
    assert.match(unclear.body, /Which column holds the phone numbers\? Several could: Phone, Mobile\..*Nothing was sent/s);
    assert.deepEqual(columnSelect(unclear.body)[0], ['', 'Choose the column…', true]);
    assert.equal((await messages(accountId)).length, 0);

    const sent = await post(client, { recipient_column: 'Mobile' }, file);
    assert.equal(sent.statusCode, 303, sent.body);
    assert.deepEqual((await messages(accountId)).map((m) => m.recipient).sort(), ['+447400123402', '+447400123404']);
    // The next upload starts on that column, and a file that has it uses it.
    const next = await client.get('/dashboard/campaigns/new');
    assert.deepEqual(columnSelect(next.body), [['', 'Found by its name (to, phone, phone number, mobile, mobile number…)', false], ['Mobile', 'Mobile', true]]);
    const fresh = await (await owner(0)).client.get('/dashboard/campaigns/new');
    assert.deepEqual(columnSelect(fresh.body), [['', 'Found by its name (to, phone, phone number, mobile, mobile number…)', true]], 'another account remembers nothing');
    const again = await post(client, { recipient_column: 'Mobile' }, csv('Mobile,Phone\n+447400123405,+447400123406\n'), PREVIEW);
    assert.deepEqual(previewTo(again.body), ['+447400123405']);
    // A file whose column is found by its name leaves the choice remembered as it was.
    assert.equal((await post(client, {}, csv('to\n+447400123407\n'))).statusCode, 303);
    assert.ok(columnSelect((await client.get('/dashboard/campaigns/new')).body).some(([v, , selected]) => v === 'Mobile' && selected));
  });

  test('national numbers are read in the default country and shown normalised; unreadable ones listed with line and reason; the country is remembered per account, first guessed from its numbers', async () => {
    const { client, accountId } = await owner(10);
    // No campaign and no number yet: the page leaves the guess to the browser's language.
    const first = await client.get('/dashboard/campaigns/new');
    assert.match(first.body, /<select id="country" name="country" aria-describedby="country-hint" data-browser-country>/);
    assert.equal(selectedCountry(first.body), '');
    await assignNumber(h.ctx, accountId, '+447700900123');
    const guessed = await client.get('/dashboard/campaigns/new');
    assert.equal(selectedCountry(guessed.body), 'GB', 'the country of the account’s number');
    assert.doesNotMatch(guessed.body, /data-browser-country/);

    const file = 'Phone Number,First Name\n07400 123401,Ann\n(020) 7946 0958,Bob\n0740 01,Cy\n+33 6 12 34 56 78,Dee\n7400123402,Eve\ncall me,Flo\n';
    const res = await post(client, { country: 'GB', template: 'Hi {{first_name}}' }, csv(file), PREVIEW);
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.body, /<strong>4 messages<\/strong> to send, <strong>2 rows<\/strong> that cannot be sent/);
    assert.match(res.body, /numbers without “\+” read as numbers of <strong>United Kingdom \(\+44\)<\/strong>/);
    assert.deepEqual(tableRows(res.body, 'The first 4 messages').map((r) => [r[0], r[1]]), [
      ['2', '+447400123401written 07400 123401'],
      ['3', '+442079460958written (020) 7946 0958'],
      ['5', '+33612345678written +33 6 12 34 56 78'],
      ['6', '+447400123402written 7400123402'],
    ]);
    assert.deepEqual(tableRows(res.body, 'Rows that cannot be sent (2)'), [
      ['4', '0740 01', 'It cannot be read as a number of United Kingdom (+44): it is too short. A number of another country needs its “+” and country code.'],
      ['7', 'call me', '`to` is not a valid E.164 number: it is not a phone number (only digits, spaces and - . / ( ) are read, or a &quot;+&quot; and the country code).'],
    ]);
    const us = await post(client, { country: 'US' }, csv('phone\n(415) 555-2671\n'), PREVIEW);
    assert.deepEqual(previewTo(us.body), ['+14155552671written (415) 555-2671']);
    // Without a country, a number needs its +, as before.
    const without = await post(client, { country: '' }, csv('phone\n07400 123401\n'), PREVIEW);
    assert.match(without.body, /`to` is not a valid E\.164 number: it must start with &quot;\+&quot;/);
    const unknown = await post(client, { country: 'XX' }, csv('phone\n07400 123401\n'), PREVIEW);
    assert.match(unknown.body, /XX is not a country this server knows/);

    const sent = await post(client, { country: 'FR' }, csv('mobile\n06 12 34 56 78\n'));
    assert.equal(sent.statusCode, 303, sent.body);
    assert.deepEqual((await messages(accountId)).map((m) => m.recipient), ['+33612345678']);
    assert.equal(selectedCountry((await client.get('/dashboard/campaigns/new')).body), 'FR', 'the country of the last campaign, over the guess');
  });

  test('an account whose Sender ID is a phone number starts on that number’s country', async () => {
    const { client, accountId } = await owner(0);
    await approveSenderId(h.ctx, (await registerSenderId(h.ctx, accountId, '14155552671')).id);
    assert.equal(selectedCountry((await client.get('/dashboard/campaigns/new')).body), 'US');
  });

  test('duplicates are counted in the preview and sent once per number (the first row’s text) unless every row is asked for; the campaign page accounts for them', async () => {
    const { client, accountId } = await owner(20);
    // The same number three times, written three ways; another once.
    const file = 'phone,name\n07400 123401,Ann\n+447400123402,Bob\n+44 7400 123401,Ann again\n7400123401,Ann thrice\n';
    const res = await post(client, { country: 'GB', template: 'Hi {{name}}' }, csv(file), PREVIEW);
    assert.match(res.body, /<strong>2 messages<\/strong> to send/);
    assert.match(res.body, /<p id="duplicates" data-duplicates="2"><strong>2 rows<\/strong> repeat a number already in the file: each number gets one message, the first row’s/);
    assert.match(res.body, /data-credits="2"/);
    const everyRow = await post(client, { country: 'GB', template: 'Hi {{name}}', every_row: 'on' }, csv(file), PREVIEW);
    assert.match(everyRow.body, /<strong>4 messages<\/strong> to send/);
    assert.match(everyRow.body, /<strong>2 rows<\/strong> repeat a number already in the file: every row is sent, as asked/);
    assert.match(everyRow.body, /data-credits="4"/);

    const sent = await post(client, { country: 'GB', template: 'Hi {{name}}' }, csv(file));
    assert.equal(sent.statusCode, 303, sent.body);
    assert.deepEqual((await messages(accountId)).map((m) => [m.recipient, m.body]).sort(), [['+447400123401', 'Hi Ann'], ['+447400123402', 'Hi Bob']]);
    assert.equal(await balance(accountId), 18);
    const location = String(sent.headers.location);
    const page = await client.get(location);
    assert.match(page.body, /4 rows: 2 messages, <span id="duplicates-skipped">2 rows repeating a number skipped<\/span><\/dd>/, 'not counted as opted out');
    const list = await client.get('/dashboard/campaigns');
    assert.match(list.body, new RegExp(`${location.split('/').pop()}</code></a></td><td[^>]*>Acme</td><td[^>]*>2</td><td[^>]*>0</td>`));

    const all = await post(client, { country: 'GB', template: 'Hi {{name}}', every_row: 'on' }, csv(file));
    assert.equal(all.statusCode, 303, all.body);
    assert.equal((await messages(accountId)).length, 6);
    assert.equal(await balance(accountId), 14);
  });

  test('a campaign has a name, by default the file’s and the date, shown in the list, the page title and the results CSV', async () => {
    const { client } = await owner(10);
    const named = await post(client, { name: '  Spring   sale ' }, csv('to\n+447400123401\n', 'customers.csv'));
    assert.equal(named.statusCode, 303, named.body);
    const location = String(named.headers.location);
    const page = await client.get(location);
    assert.match(page.body, /<title>Campaign Spring sale · Pigeon<\/title>/);
    const results = await client.get(`${location}/results.csv`);
    assert.match(results.body.split('\r\n')[1]!, /,Spring sale,transactional,$/);
    const unnamed = await post(client, {}, csv('to\n+447400123402\n', 'customers.csv'));
    assert.equal(unnamed.statusCode, 303, unnamed.body);
    // The harness's clock: 2026-03-01.
    assert.match((await client.get(String(unnamed.headers.location))).body, /<title>Campaign customers\.csv 2026-03-01 · Pigeon<\/title>/);
    const list = await client.get('/dashboard/campaigns');
    assert.match(list.body, /<span class="campaign-name">customers\.csv 2026-03-01<\/span> <code>cmp_/);
    assert.match(list.body, /<span class="campaign-name">Spring sale<\/span> <code>cmp_/);
    const long = await post(client, { name: 'x'.repeat(101) }, csv('to\n+447400123403\n'));
    assert.equal(long.statusCode, 400);
    assert.match(long.body, /The campaign name has 101 characters; the maximum is 100\. Nothing was sent/);
  });

  test('the opt-out line is added only when asked, and counted in the segments and the cost the preview shows', async () => {
    const { client, accountId } = await owner(10);
    // 150 characters: one segment alone, two with the line (150 + 1 + 21 > 160).
    const template = `${'x'.repeat(144)} {{name}}`;
    const file = csv('to,name\n+447400123401,Ann12\n+447400123402,Bob12\n');
    const plain = await post(client, { template }, file, PREVIEW);
    assert.match(plain.body, /data-credits="2"/);
    assert.doesNotMatch(plain.body, /Reply STOP/);
    const withLine = await post(client, { template, opt_out_line: 'on' }, file, PREVIEW);
    assert.match(withLine.body, /Each message ends with “Reply STOP to opt out”, counted in its segments and the cost/);
    assert.match(withLine.body, /x Ann12\nReply STOP to opt out<\/span><\/td><td data-label="Encoding">GSM-7<\/td><td data-label="Segments">2<\/td>/);
    assert.match(withLine.body, /data-credits="4"/);
    const sent = await post(client, { template, opt_out_line: 'on' }, file);
    assert.equal(sent.statusCode, 303, sent.body);
    const stored = await messages(accountId);
    assert.ok(stored.every((m) => m.body.endsWith('\nReply STOP to opt out') && Number(m.segments) === 2));
    assert.equal(await balance(accountId), 6);
    assert.match((await client.get(String(sent.headers.location))).body, /with “Reply STOP to opt out” added on its own line/);
  });

  test('tracked links: each recipient a short link of their own, priced as shortened; the page and the CSV show clicks and the click-through rate', async () => {
    const base = h.config.links.baseUrl;
    h.config.links.baseUrl = 'https://127.0.0.1:8443/l';
    try {
      const { client, accountId } = await owner(10);
      // As written 2 segments (the URL alone is over 160 characters); shortened, one.
      const template = `Hi {{name}}, our sale: https://127.0.0.1/sale?ref=${'r'.repeat(130)}&who={{name}}`;
      const file = csv('to,name\n+447400123401,Ann\n+447400123402,Bob\n');
      assert.match((await post(client, { template }, file, PREVIEW)).body, /data-credits="4"/);
      const preview = await post(client, { template, track_links: 'on' }, file, PREVIEW);
      assert.match(preview.body, /id="track-links-note"/);
      assert.match(preview.body, /data-credits="2"/);
      const sent = await post(client, { template, track_links: 'on' }, file);
      assert.equal(sent.statusCode, 303, sent.body);
      assert.equal(await balance(accountId), 8);
      const stored = await messages(accountId);
      const codes = stored.map((m) => /^Hi (Ann|Bob), our sale: https:\/\/127\.0\.0\.1:8443\/l\/([0-9A-Za-z]{8})$/.exec(m.body)?.[2]);
      assert.ok(codes[0] && codes[1] && codes[0] !== codes[1], stored.map((m) => m.body).join(' | '));
      const location = String(sent.headers.location);
      assert.match((await client.get(location)).body, /no click-through rate before a message is delivered/);
      await h.workers.drain();
      h.clock.advance(5_000);
      await h.workers.drain();
      const clicked = await h.app.inject({ method: 'GET', url: `/l/${codes[0]}`, headers: { 'user-agent': 'Mozilla/5.0 (Android 14; Mobile) Firefox/120.0' } });
      assert.equal(clicked.statusCode, 302);
      assert.equal(clicked.headers.location, `https://127.0.0.1/sale?ref=${'r'.repeat(130)}&who=${stored[0]!.body.includes('Ann') ? 'Ann' : 'Bob'}`);
      const page = await waitFor(async () => {
        const body = (await client.get(location)).body;
        return /data-clicks="1"/.test(body) && body;
      });
      assert.match(page, /1 click; 1 recipient clicked: <span id="click-through">50\.0% of the 2 delivered<\/span>/);
      const lines = (await client.get(`${location}/results.csv`)).body.trimEnd().split('\r\n');
      const clicksColumn = lines[0]!.split(',').indexOf('clicks');
      const clicks = new Map(lines.slice(1).map((l) => [l.split(',')[0], l.split(',')[clicksColumn]]));
      assert.deepEqual([clicks.get(stored[0]!.id), clicks.get(stored[1]!.id)], ['1', '0']);
    } finally {
      h.config.links.baseUrl = base;
    }
  });

  test('the click chart: counted clicks per UTC hour since the campaign went out, per day once past 48 hours, bots and HEAD left out, as bars and a table', async () => {
    const base = h.config.links.baseUrl;
    const saved = h.clock.ms;
    h.config.links.baseUrl = 'https://127.0.0.1:8443/l';
    const sentAt = Date.parse('2026-07-01T09:20:00Z');
    h.clock.ms = sentAt;
    try {
      const { client, accountId } = await owner(10);
      const file = csv('to,name\n+447400123401,Ann\n+447400123402,Bob\n+447400123403,Cy\n');
      const sent = await post(client, { template: 'Hi {{name}}: https://127.0.0.1/sale', track_links: 'on', category: 'transactional' }, file);
      assert.equal(sent.statusCode, 303, sent.body);
      const location = String(sent.headers.location);
      const codes = (await messages(accountId)).map((m) => /\/l\/([0-9A-Za-z]{8})$/.exec(m.body)![1]!);
      const phone = 'Mozilla/5.0 (Android 14; Mobile) Firefox/120.0';
      assert.match((await client.get(location)).body, /<section id="click-chart"[^>]*><h2 id="click-chart-heading">Clicks per hour \(UTC\)<\/h2><p class="muted">No clicks yet\.<\/p>/);
      const click = async (at: string, code: string, opts: { method?: 'GET' | 'HEAD'; ua?: string } = {}) => {
        h.clock.ms = Date.parse(at);
        const res = await h.app.inject({ method: opts.method ?? 'GET', url: `/l/${code}`, headers: { 'user-agent': opts.ua ?? phone } });
        assert.equal(res.statusCode, 302);
      };
      await click('2026-07-01T09:30:00Z', codes[0]!);
      await click('2026-07-01T09:59:59Z', codes[1]!);
      await click('2026-07-01T10:00:00Z', codes[1]!, { method: 'HEAD' });
      await click('2026-07-01T10:30:00Z', codes[2]!, { ua: 'facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)' });
      await click('2026-07-01T11:00:00Z', codes[0]!);
      h.clock.ms = Date.parse('2026-07-01T12:10:00Z');
      const hourly = await waitFor(async () => {
        const body = (await client.get(location)).body;
        return /data-clicks="3"/.test(body) && body;
      });
      const chart = /<section id="click-chart".*?<\/section>/s.exec(hourly)![0];
      assert.match(chart, /data-bucket="hour"/);
      assert.deepEqual(tableRows(chart, 'Clicks per hour (UTC), hours with clicks'), [
        ['2026-07-01 09:00 UTC', '2'],
        ['2026-07-01 11:00 UTC', '1'],
      ]);
      // One bar per hour from 09:00 to 12:00: 2, 0, 1, 0 (an empty hour has no bar).
      assert.deepEqual([...chart.matchAll(/<rect class="bar"[^>]*data-value="(\d+)"><title>([^<]*)<\/title>/g)].map((m) => [m[1], m[2]]), [
        ['2', '1 Jul 09:00: 2 clicks'],
        ['1', '11:00: 1 click'],
      ]);
      assert.match(chart, /<svg class="bar-chart"[^>]*role="img" aria-labelledby="click-chart-title click-chart-title-desc"/);
      assert.match(chart, /<desc id="click-chart-title-desc">3 clicks from 2026-07-01 09:00 to 2026-07-01 12:00 UTC; the most, 2, in the hour from 2026-07-01 09:00\.<\/desc>/);

      // Three days on, by the day: a click on the 4th joins those of the 1st. (The session has
      // expired meanwhile: the owner logs in again.)
      await click('2026-07-04T08:00:00Z', codes[2]!);
      h.clock.ms = Date.parse('2026-07-04T09:00:00Z');
      const again = (await dashboardLogIn(h.app, `campaign${n}@example.com`, PASSWORD)).client;
      const daily = await waitFor(async () => {
        const body = (await again.get(location)).body;
        return /data-clicks="4"/.test(body) && body;
      });
      const dayChart = /<section id="click-chart".*?<\/section>/s.exec(daily)![0];
      assert.match(dayChart, /data-bucket="day"/);
      assert.deepEqual(tableRows(dayChart, 'Clicks per day (UTC), days with clicks'), [
        ['2026-07-01', '3'],
        ['2026-07-04', '1'],
      ]);
      assert.deepEqual([...dayChart.matchAll(/<rect class="bar"[^>]*data-value="(\d+)"/g)].map((m) => m[1]), ['3', '1']);
      assert.equal((dayChart.match(/<text [^>]*text-anchor="middle"[^>]*>/g) ?? []).length, 4, 'one axis label per day, 1 to 4 July');
    } finally {
      h.config.links.baseUrl = base;
      h.clock.ms = saved;
    }
  });

  test('an XLSX file follows the same rules: the column by its name or asked, national numbers (typed as numbers too), duplicates', async () => {
    const { client, accountId } = await owner(10);
    // A number typed in a cell loses its leading 0: 7400123401 is 07400 123401.
    const book = xlsxWorkbook(new Map<number, (string | number)[]>([[1, ['First Name', 'Mobile Number']], [2, ['Ann', '07400 123401']], [3, ['Bob', 7400123402]], [4, ['Ann', 7400123401]]]));
    const res = await post(client, { country: 'GB', template: 'Hi {{first_name}}' }, xlsx(book), PREVIEW);
    assert.match(res.body, /The file has 3 rows \(XLSX, first sheet\): <strong>2 messages<\/strong> to send/);
    assert.deepEqual(previewTo(res.body), ['+447400123401written 07400 123401', '+447400123402written 7400123402']);
    assert.match(res.body, /data-duplicates="1"/);
    const sent = await post(client, { country: 'GB', template: 'Hi {{first_name}}' }, xlsx(book));
    assert.equal(sent.statusCode, 303, sent.body);
    assert.equal((await messages(accountId)).length, 2);
    const two = xlsxWorkbook(new Map<number, (string | number)[]>([[1, ['Phone', 'Cell']], [2, ['07400 123401', '07400 123402']]]));
    const asked = await post(client, { country: 'GB' }, xlsx(two), PREVIEW);
    assert.match(asked.body, /Several could: Phone, Cell/);
    const chosen = await post(client, { country: 'GB', recipient_column: 'Cell' }, xlsx(two), PREVIEW);
    assert.deepEqual(previewTo(chosen.body), ['+447400123402written 07400 123402']);
  });
  test('the sample files of docs/campaign-files.md read as the guide says, in the United Kingdom', async () => {
    const { client } = await owner(0);
    const template = 'Hi {{first_name}}, your table for {{table}} is ready';
    for (const [file, column] of [
      [csv(readFileSync('docs/samples/contacts.csv', 'utf8'), 'contacts.csv'), 'Phone Number'],
      [xlsx(readFileSync('docs/samples/contacts.xlsx'), 'contacts.xlsx'), 'Mobile Number'],
    ] as const) {
      const res = await post(client, { country: 'GB', template }, file, PREVIEW);
      assert.match(res.body, /The file has 5 rows \([^)]*\): <strong>3 messages<\/strong> to send, <strong>1 row<\/strong> that cannot be sent/, column);
      assert.match(res.body, new RegExp(`column <strong>“${column}”</strong> \\(found by its name\\)`));
      assert.match(res.body, /data-duplicates="1"/);
      assert.match(res.body, /Hi Ann, your table for 4 is ready/);
      assert.deepEqual(previewTo(res.body).map((t) => t.replace(/written.*/, '')), ['+447400123401', column === 'Phone Number' ? '+442079460958' : '+447400123402', '+33612345678']);
      assert.deepEqual(tableRows(res.body, 'Rows that cannot be sent (1)').map((r) => r.slice(0, 2)), [['6', '0740 01']]);
    }
  });
  test('quiet hours: a marketing campaign composed at 23:00 in New York says how many are held and until when, hands none of them to the carrier before 08:00 there, then all', async () => {
    const saved = h.clock.ms;
    const nyEleven = Date.parse('2026-06-10T03:00:00Z');
    const nyEight = Date.parse('2026-06-10T12:00:00Z');
    h.clock.ms = nyEleven;
    const { client, accountId } = await owner(20);
    const page = await client.get('/dashboard/campaigns/new');
    assert.match(page.body, /<select id="category" name="category"[^>]*><option value="marketing" selected>Marketing<\/option><option value="transactional">Transactional<\/option>/, 'marketing by default, shown and changeable');
    // Four New York numbers and one in London, where it is 04:00 (held until 08:00 there, 07:00 UTC).
    const file = 'to,name\n+12125550101,Ann\n+12125550102,Bob\n+12125550103,Cy\n+12125550104,Dee\n+447400123401,Eve\n';
    const preview = await compose(client, { template: 'Sale, {{name}}', category: 'marketing' }, file, '/dashboard/campaigns/preview');
    assert.match(preview.res.body, /id="held-note" data-held="5" data-held-until="2026-06-10T12:00:00.000Z"/);
    assert.match(preview.res.body, /<strong>5 recipients<\/strong> are outside the quiet-hours window.*between 2026-06-10 07:00 UTC and 2026-06-10 12:00 UTC/s);
    const transactional = await compose(client, { template: 'Sale, {{name}}', category: 'transactional' }, file, '/dashboard/campaigns/preview');
    assert.match(transactional.res.body, /id="held-note" data-held="0"/);

    const { res } = await compose(client, { template: 'Sale, {{name}}', category: 'marketing' }, file);
    assert.equal(res.statusCode, 303, res.body);
    const location = String(res.headers.location);
    assert.match((await client.get(location)).body, /<dd id="campaign-category">Marketing/);
    const stored = await messages(accountId);
    const ny = stored.filter((m) => m.recipient.startsWith('+1212'));
    assert.equal(ny.length, 4);
    assert.ok(stored.every((m) => m.category === 'marketing' && m.status === 'pending'));
    assert.ok(ny.every((m) => Number(m.held_until) === nyEight));
    assert.equal(await balance(accountId), 15, 'charged as usual');
    for (const at of [nyEleven, nyEleven + 4 * 3_600_000, nyEight - 1]) {
      h.clock.ms = at;
      await h.workers.drain();
      assert.deepEqual(ny.filter((m) => h.carrier.submitted.has(m.id)), [], `none by ${new Date(at).toISOString()}`);
    }
    h.clock.ms = nyEight + 30 * MINUTE;
    await h.workers.drain();
    assert.equal(stored.filter((m) => h.carrier.submitted.has(m.id)).length, 5, 'all of them once the window opens');
    const lines = (await client.get(`${location}/results.csv`)).body.trim().split('\r\n');
    const row = lines.find((l) => l.includes('+12125550101'))!;
    assert.match(row, /,marketing,2026-06-10T12:00:00\.000Z$/);
    h.clock.ms = saved;
  });

  test('a campaign form without a category is transactional, as the API; a transactional campaign is never held', async () => {
    const { client, accountId } = await owner(5);
    const { res } = await compose(client, { template: 'Your order has shipped' }, 'to\n+12125550111\n');
    assert.equal(res.statusCode, 303, res.body);
    const [m] = await messages(accountId);
    assert.equal(m!.category, null);
    assert.equal(m!.held_until, null);
    assert.match((await client.get(String(res.headers.location))).body, /<dd id="campaign-category">Transactional/);
  });
});
