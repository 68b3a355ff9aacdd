/**
 * The example app (examples/csv-campaign) end to end: a CSV campaign sent through the client to a
 * real server, whose webhook worker delivers the events over HTTPS to the example's receiver,
 * which verifies them with `verifyWebhook`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { getAccount } from '../../../src/services/accounts/accounts.ts';
import { WebhookDispatcher } from '../../../src/webhooks/dispatcher.ts';
import { createWorkers, type Workers } from '../../../src/workers/workers.ts';
import { makeTestCa, type TestCa } from '../../../test/api/webhooks-receiver.ts';
import { readCampaign, readCampaignFile } from '../../../examples/csv-campaign/csv.ts';
import { xlsxWorkbook } from '../../../test/helpers/xlsx.ts';
import { progressBar, runCampaign } from '../../../examples/csv-campaign/campaign.ts';
import { webhookHandler } from '../../../examples/csv-campaign/receiver.ts';
import { Pigeon, type WebhookEvent } from '../src/index.ts';
import { liveServer, type LiveServer } from './server.ts';

const CSV = [
  'to,message',
  '+447911123456,"Hi Ann, your table is ready."',
  '+254712345678,"Say ""hello"", Bo"',
  'not-a-number,rejected',
  '+447911120000,fails after sending',
  '+14155552671,last one',
].join('\r\n');

describe('examples/csv-campaign', () => {
  let server: LiveServer;
  let ca: TestCa;
  let receiver: https.Server;
  let receiverUrl: string;
  let workers: Workers;
  const events: { event: WebhookEvent; id: string }[] = [];
  const seen = new Set<string>();
  let secret = '';

  before(async () => {
    server = await liveServer({ WEBHOOK_ALLOW_PRIVATE: 'true', SIM_DELIVERY_DELAY_MS: '0' });
    ca = makeTestCa();
    receiver = https.createServer(
      { key: ca.key, cert: ca.cert },
      // Built per request: the secret is known only once the account exists, and the server signs
      // with its test clock, which the receiver's clock must follow.
      (req, res) =>
        webhookHandler({ secret, seen, verify: { nowSeconds: Math.floor(server.h.clock.now() / 1000) }, onEvent: (event, id) => events.push({ event, id }) })(req, res),
    );
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `https://127.0.0.1:${(receiver.address() as AddressInfo).port}/pigeon`;
    workers = createWorkers(server.h.ctx, server.h.carrier, { webhook: { dispatcher: new WebhookDispatcher({ timeoutMs: 2000, allowPrivate: true, ca: ca.ca }) } });
  });
  after(async () => {
    await workers.stop();
    await server.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
    ca.cleanup();
  });

  test('reads quoted CSV fields with the dashboard composer\'s reader: its separators and encodings too', async () => {
    const rows = await readCampaignFile(CSV);
    assert.equal(rows.length, 5);
    assert.deepEqual(rows[1], { line: 3, to: '+254712345678', message: 'Say "hello", Bo' });
    await assert.rejects(readCampaignFile('to,text\n1,2'), /must name a "message" column/);
    await assert.rejects(readCampaignFile('name,message\n1,2'), /Which column holds the phone numbers\? None is named to, phone/);
    // A spreadsheet's export in a decimal-comma locale, and Excel's "Unicode text" (UTF-16 with its mark).
    assert.deepEqual(await readCampaignFile('\uFEFFto;message\r\n+447911123456;"Hi; Ann"\r\n'), [{ line: 2, to: '+447911123456', message: 'Hi; Ann' }]);
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('to\tmessage\n+447911123456\tCafé ☕\n', 'utf16le')]);
    assert.deepEqual(await readCampaignFile(utf16), [{ line: 2, to: '+447911123456', message: 'Café ☕' }]);
  });

  test('fills a template from the other columns, with the dashboard composer\'s syntax', async () => {
    const csv = 'to,First_Name,time\n+447911123456,Ann,19:30\n+447911123457,"Bo, Jr.",20:00\n';
    assert.deepEqual(await readCampaignFile(csv, 'Hi {{first_name}}, your table is ready at {{ time }}.'), [
      { line: 2, to: '+447911123456', message: 'Hi Ann, your table is ready at 19:30.' },
      { line: 3, to: '+447911123457', message: 'Hi Bo, Jr., your table is ready at 20:00.' },
    ]);
    await assert.rejects(readCampaignFile(csv, 'Hi {{nickname}}'), /columns the file does not have: nickname/);
    await assert.rejects(readCampaignFile('phone,mobile,name\n1,2,3', 'Hi {{name}}'), /Several could: phone, mobile/);
  });

  test('reads contact lists as the composer does: the phone column by its name or chosen, national numbers of a country, repeats sent once, the opt-out line; XLSX too', async () => {
    const contacts = 'Phone Number,First Name\n07400 123401,Ann\n(020) 7946 0958,Bob\n+44 7400 123401,Ann again\n0740 01,Cy\n';
    const file = await readCampaign(contacts, { template: 'Hi {{first_name}}', country: 'GB' });
    assert.equal(file.column, 'Phone Number');
    assert.deepEqual(file.rows, [
      { line: 2, to: '+447400123401', message: 'Hi Ann' },
      { line: 3, to: '+442079460958', message: 'Hi Bob' },
      // Unreadable: sent as written, for the API to reject with its line.
      { line: 5, to: '0740 01', message: 'Hi Cy' },
    ]);
    assert.deepEqual(file.duplicates, [{ line: 4, to: '+447400123401', message: 'Hi Ann again' }]);
    assert.equal((await readCampaignFile(contacts, { template: 'Hi', country: 'GB', everyRow: true })).length, 4);
    assert.deepEqual((await readCampaignFile('to,message\n+447400123401,Hello\n', { optOutLine: true }))[0]!.message, 'Hello\nReply STOP to opt out');
    const twoColumns = 'Name,Phone,Mobile\nAnn,020 7946 0958,07400 123411\n';
    assert.deepEqual(await readCampaignFile(twoColumns, { template: 'Hi {{name}}', country: 'GB', column: 'Mobile' }), [{ line: 2, to: '+447400123411', message: 'Hi Ann' }]);
    await assert.rejects(readCampaignFile(contacts, { template: 'Hi', country: 'ZZ' }), /unknown country code: ZZ/);
    const book = xlsxWorkbook(new Map<number, (string | number)[]>([[1, ['Mobile', 'Name']], [2, [7400123401, 'Ann']], [3, ['07400 123401', 'Ann again']]]));
    const xlsx = await readCampaign(book, { template: 'Hi {{name}}', country: 'GB', format: 'xlsx' });
    assert.deepEqual([xlsx.rows, xlsx.duplicates.length], [[{ line: 2, to: '+447400123401', message: 'Hi Ann' }], 1]);
  });

  test('sends the campaign in chunks with a progress bar, and re-running it sends nothing twice', async () => {
    const { key, accountId } = await server.h.customer({ credits: 20 });
    secret = (await getAccount(server.h.ctx, accountId)).webhook_secret;
    const pigeon = new Pigeon({ apiKey: key, baseUrl: server.baseUrl });
    const rows = await readCampaignFile(CSV);
    const lines: string[] = [];
    const progress = { write: (t: string) => lines.push(t) };
    const summary = await runCampaign(pigeon, rows, { from: 'Acme', chunkSize: 2, callbackUrl: receiverUrl, progress }, 'f'.repeat(64));
    assert.equal(summary.total, 5);
    assert.equal(summary.queued, 4);
    assert.equal(summary.batch_ids.length, 3);
    assert.deepEqual(summary.rejected.map((r) => [r.line, r.code]), [[4, 'invalid_recipient']]);
    assert.equal(summary.credits_remaining, 16);
    assert.deepEqual(lines, [progressBar(0, 5), progressBar(2, 5), progressBar(4, 5), progressBar(5, 5)].map((l) => `${l}\n`));

    const again = await runCampaign(pigeon, rows, { from: 'Acme', chunkSize: 2, callbackUrl: receiverUrl, progress }, 'f'.repeat(64));
    assert.deepEqual(again.batch_ids, summary.batch_ids, 'answered from the idempotency store');
    assert.equal((await pigeon.account.get()).data.credits_remaining, 16);

    // Dispatch, receipts, then the webhook deliveries to the example receiver.
    for (let i = 0; i < 3; i++) {
      await workers.drain();
      server.h.clock.advance(10);
    }
    const kinds = events.map((e) => `${e.event.event} ${e.event.to}`).sort();
    assert.deepEqual(kinds, [
      'sms.delivered +14155552671',
      'sms.delivered +254712345678',
      'sms.delivered +447911123456',
      'sms.failed +447911120000',
      'sms.sent +14155552671',
      'sms.sent +254712345678',
      'sms.sent +447911120000',
      'sms.sent +447911123456',
    ]);
    assert.ok(events.every((e) => e.id.startsWith('evt_') && summary.batch_ids.includes(e.event.batch_id as string)));
    const listed = await pigeon.webhooks.listEvents({ status: 'delivered' });
    assert.equal(listed.pagination.total, 8, 'Pigeon saw every delivery answered with 200');
  });

  test('the receiver refuses a forged event', async () => {
    const body = JSON.stringify({ event: 'sms.delivered' });
    const status = await new Promise<number>((resolve, reject) => {
      const req = https.request(receiverUrl, { method: 'POST', ca: ca.ca, headers: { 'x-pigeon-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(body);
    });
    assert.equal(status, 401);
  });
});
