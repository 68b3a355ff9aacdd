import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../errors/catalogue.ts';
import { readCampaignCsv, RecipientColumnUnclear, sniffSeparator, type CampaignFileLimits, type CampaignRow } from './campaign-file.ts';

const LIMITS = { maxRows: 1000, maxBytes: 1024 * 1024 };

/** The file cut into chunks of `size` bytes, as an upload arrives. */
async function* chunks(bytes: Buffer, size = 7): AsyncGenerator<Buffer> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function read(bytes: Buffer | string, limits: CampaignFileLimits = LIMITS, size = 7) {
  const rows: CampaignRow[] = [];
  const summary = await readCampaignCsv(chunks(Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes, 'utf8'), size), limits, (r) => {
    rows.push(r);
  });
  return { summary, rows };
}

async function refusal(bytes: Buffer | string, limits: CampaignFileLimits = LIMITS): Promise<string> {
  try {
    await read(bytes, limits);
  } catch (err) {
    assert.ok(err instanceof AppError, String(err));
    assert.equal(err.code, 'invalid_request');
    return err.message;
  }
  assert.fail('the file was accepted');
}

test('quoting: separators, escaped quotes and line breaks inside quotes; each row keeps the line it starts on', async () => {
  const csv = 'to,first_name,note\r\n+447911123456,"Ann, Jr.","She said ""hi"""\r\n\r\n+447911123457,Bob,"two\nlines"\n+447911123458,Cy,last\n';
  const { summary, rows } = await read(csv);
  assert.deepEqual(summary, { headers: ['to', 'first_name', 'note'], toColumn: 0, toColumnHow: 'found', rows: 3, separator: ',', encoding: 'utf-8' });
  assert.deepEqual(rows, [
    { line: 2, cells: ['+447911123456', 'Ann, Jr.', 'She said "hi"'] },
    { line: 4, cells: ['+447911123457', 'Bob', 'two\nlines'] },
    { line: 6, cells: ['+447911123458', 'Cy', 'last'] },
  ]);
});

test('a byte-order mark is dropped; `To` is found in any case and position; short rows keep what they have', async () => {
  const { summary, rows } = await read(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('name,To\nZoë,+447911123456\nsolo\n')]), LIMITS, 2);
  assert.deepEqual(summary.headers, ['name', 'To']);
  assert.equal(summary.toColumn, 1);
  assert.deepEqual(rows.map((r) => r.cells), [['Zoë', '+447911123456'], ['solo']]);
});

test('the recipient column is found by its usual name, or the chosen one; unclear, the reader stops at the header with the columns to ask about', async () => {
  const found = await read('Phone Number,First Name\n07400 123401,Ann\n');
  assert.deepEqual([found.summary.toColumn, found.summary.toColumnHow], [0, 'found']);
  const unclear = async (csv: string, chosen?: string) => {
    const rows: CampaignRow[] = [];
    const err = await readCampaignCsv(chunks(Buffer.from(csv)), { ...LIMITS, recipientColumn: chosen }, (r) => void rows.push(r)).then(
      () => assert.fail('the file was accepted'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof RecipientColumnUnclear, String(err));
    assert.equal(err.code, 'recipient_column_unclear');
    assert.equal(rows.length, 0, 'no row is read before the column is known');
    return err;
  };
  const two = await unclear('Name,Phone,Mobile\nAnn,07400 123401,07400 123402\n');
  assert.deepEqual([two.columns, two.candidates], [['Name', 'Phone', 'Mobile'], [1, 2]]);
  assert.match(two.message, /Several could: Phone, Mobile/);
  const none = await unclear('Name,Contact\nAnn,07400 123401\n', 'Cell');
  assert.deepEqual(none.candidates, []);
  assert.match(none.message, /None is named to, phone, phone number, .* the file has: Name, Contact/);
  const chosen = await readCampaignCsv(chunks(Buffer.from('Name,Phone,Mobile\nAnn,1,2\n')), { ...LIMITS, recipientColumn: 'Mobile' }, () => {});
  assert.deepEqual([chosen.toColumn, chosen.toColumnHow], [2, 'chosen']);
});

test('separators: semicolon and tab are recognised from the header', async () => {
  assert.equal(sniffSeparator('to;name;"a,b"'), ';');
  assert.equal(sniffSeparator('to\tname'), '\t');
  assert.equal(sniffSeparator('to'), ',');
  assert.deepEqual((await read('to;amount\n+447911123456;3,50\n')).rows[0]!.cells, ['+447911123456', '3,50']);
  const tab = await read('to\tname\n+447911123456\tAnn\n');
  assert.equal(tab.summary.separator, '\t');
  assert.deepEqual(tab.rows[0]!.cells, ['+447911123456', 'Ann']);
});

test('encodings: UTF-16 LE and BE by their mark; other bytes that are not UTF-8 are refused with a hint', async () => {
  const text = 'to,name\n+447911123456,Zoë 😀\n';
  const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
  const be = Buffer.from(le);
  be.swap16();
  for (const bytes of [le, be]) {
    const { summary, rows } = await read(bytes, LIMITS, 3);
    assert.deepEqual(rows[0]!.cells, ['+447911123456', 'Zoë 😀']);
    assert.match(summary.encoding, /^utf-16/);
  }
  const latin1 = Buffer.from('to,name\n+447911123456,Zo\xeb\n', 'latin1');
  assert.match(await refusal(latin1), /not UTF-8 text/);
});

test('empty files, a header without a recipient column, and a header alone', async () => {
  assert.match(await refusal(''), /empty/);
  assert.match(await refusal('\n\n'), /empty/);
  await assert.rejects(read('contact,name\n+447911123456,Ann\n'), /Which column holds the phone numbers\?.*the file has: contact, name/);
  const alone = await read('to,name');
  assert.equal(alone.summary.rows, 0);
  assert.deepEqual(alone.rows, []);
});

test('malformed CSV names its line; limits on rows, bytes and one row', async () => {
  assert.match(await refusal('to,name\n+447911123456,"Ann\n+447911123457,Bob\n'), /quote is opened and never closed/);
  assert.match(await refusal(`to\n${'+447911123456\n'.repeat(11)}`, { maxRows: 10, maxBytes: 1e6 }), /more than 10 rows/);
  assert.match(await refusal(`to\n${'+447911123456\n'.repeat(100)}`, { maxRows: 1000, maxBytes: 1000 }), /larger than/);
  assert.match(await refusal(`to,text\n+447911123456,${'x'.repeat(200)}\n`, { maxRows: 10, maxBytes: 1e6, maxRowCharacters: 100 }), /longer than 100 characters/);
});

test('a huge file streams through row by row: 100,000 rows in 64 KiB chunks, each seen once, in order', async () => {
  const lines = ['to,first_name'];
  for (let i = 0; i < 100_000; i++) lines.push(`+4479111${String(i).padStart(5, '0')},Name ${i}`);
  const bytes = Buffer.from(`${lines.join('\n')}\n`);
  let n = 0;
  let ordered = true;
  const summary = await readCampaignCsv(chunks(bytes, 64 * 1024), { maxRows: 100_000, maxBytes: 10 * 1024 * 1024 }, (row) => {
    if (row.line !== n + 2 || row.cells[1] !== `Name ${n}`) ordered = false;
    n++;
  });
  assert.equal(summary.rows, 100_000);
  assert.equal(n, 100_000);
  assert.ok(ordered);
});

test('a file without a line break: refused once it outgrows a row, after reading only that much of it', async () => {
  // 8 MiB on one line, as an upload arrives (64 KiB chunks). The reader waits for the header's
  // line break to choose the separator; past a row's length there is nothing more to wait for.
  const chunk = Buffer.alloc(64 * 1024, 'a');
  let pulled = 0;
  async function* oneLine() {
    for (let i = 0; i < 128; i++) {
      pulled++;
      yield chunk;
    }
  }
  await assert.rejects(readCampaignCsv(oneLine(), { maxRows: 10, maxBytes: 10 * 1024 * 1024 }, () => {}), /cannot be read near line 1: a row is longer than 65,536 characters/);
  assert.ok(pulled <= 2, `read ${pulled} chunks of 64 KiB`);

  // With room for the whole line, it is read to its end once: a header without a recipient column, its name cut short in the message.
  await assert.rejects(
    readCampaignCsv(chunks(Buffer.alloc(3 * 1024 * 1024, 'a'), 64 * 1024), { maxRows: 10, maxBytes: 10 * 1024 * 1024, maxRowCharacters: 4 * 1024 * 1024 }, () => {}),
    /the file has: a{40}…\.$/,
  );
});

test('a header ended by a lone carriage return (old Mac line endings) is found as it arrives', async () => {
  const { summary, rows } = await read('to;name\r+447911123456;Ann\r+447911123457;Bob\r');
  assert.equal(summary.separator, ';');
  assert.deepEqual(rows.map((r) => r.cells), [['+447911123456', 'Ann'], ['+447911123457', 'Bob']]);
});
