import assert from 'node:assert/strict';
import { test } from 'node:test';
import { zipSync } from 'fflate';
import { readCampaignXlsx } from './campaign-xlsx.ts';
import { RecipientColumnUnclear, type CampaignRow } from './campaign-file.ts';
import { xlsxWorkbook } from '../../../test/helpers/xlsx.ts';
import { checkArchive, firstSheetPath, Refused, rowCounter } from './xlsx-archive.mjs';

async function* once(buf: Buffer) {
  yield buf;
}

async function read(buf: Buffer, maxRows = 100) {
  const rows: CampaignRow[] = [];
  let headers: string[] = [];
  const summary = await readCampaignXlsx(once(buf), { maxRows, maxBytes: 1024 * 1024 }, (r) => void rows.push(r), (h) => (headers = h));
  return { rows, headers, summary };
}

test('the first sheet: headers, rows with their sheet row number, numbers kept exact, empty rows skipped', async () => {
  const book = xlsxWorkbook(
    new Map<number, (string | number)[]>([
      [1, ['To', ' first_name ']],
      [2, ['+33612345678', 'Ana']],
      [4, [33612345679123456, 'Zoë & Co <x>']],
      [5, ['', '']],
    ]),
  );
  const { rows, headers, summary } = await read(book);
  assert.deepEqual(headers, ['To', 'first_name']);
  assert.deepEqual(rows, [
    { line: 2, cells: ['+33612345678', 'Ana'] },
    { line: 4, cells: ['33612345679123456', 'Zoë & Co <x>'] },
  ]);
  assert.equal(summary.rows, 2);
  assert.equal(summary.format, 'xlsx');
  assert.equal(summary.toColumn, 0);
});

test('the recipient column by its usual name, as in a CSV; unclear, the owner is asked', async () => {
  const { summary } = await read(xlsxWorkbook(new Map<number, (string | number)[]>([[1, ['First Name', 'Mobile Number']], [2, ['Ann', 7400123401]]])));
  assert.deepEqual([summary.toColumn, summary.toColumnHow], [1, 'found']);
  await assert.rejects(read(xlsxWorkbook(new Map([[1, ['Phone', 'Cell']], [2, ['1', '2']]]))), (err: Error) => err instanceof RecipientColumnUnclear && err.candidates.join() === '0,1');
});

test('refused whole: no recipient column, too many rows, not a workbook, an old .xls, too large once unpacked', async () => {
  await assert.rejects(read(xlsxWorkbook(new Map([[1, ['name']], [2, ['+33612345678']]]))), /Which column holds the phone numbers\? None is named/);
  await assert.rejects(read(xlsxWorkbook(new Map([[1, ['to']], [2, ['+1']], [3, ['+2']]])), 1), /more than 1 rows/);
  await assert.rejects(read(Buffer.from('to\n+33612345678\n')), /not an XLSX workbook/);
  await assert.rejects(read(Buffer.concat([Buffer.from('d0cf11e0a1b11ae1', 'hex'), Buffer.alloc(600)])), /not an XLSX workbook|old Excel/);
  await assert.rejects(read(Buffer.alloc(0)), /empty/);
  // 80 MiB of zeros deflate to about 80 KiB: refused from the sizes the archive declares.
  const bomb = Buffer.from(zipSync({ 'xl/worksheets/sheet1.xml': new Uint8Array(80 * 1024 * 1024) }, { level: 9 }));
  assert.ok(bomb.length < 1024 * 1024);
  await assert.rejects(read(bomb), /too large once unpacked/);
});

test('an archive that declares small parts but inflates to more is refused as it inflates, before any parsing', async () => {
  // 8 MiB of one sheet, its sizes rewritten to claim 100 bytes in both the local header and the directory.
  const lying = Buffer.from(zipSync({ 'xl/worksheets/sheet1.xml': new Uint8Array(8 * 1024 * 1024) }, { level: 9 }));
  lying.writeUInt32LE(100, 22);
  const directory = lying.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
  lying.writeUInt32LE(100, directory + 24);
  const bounds = { maxRows: 100, maxSheetBytes: 1024 * 1024, maxUnpackedBytes: 2 * 1024 * 1024 };
  assert.throws(() => checkArchive(lying, bounds), (err: Error) => err instanceof Refused && /too large once unpacked \(a sheet of more than 1 MiB/.test(err.message));
  // The same part, honest about its size, is refused from the directory alone.
  const honest = Buffer.from(zipSync({ 'xl/worksheets/sheet1.xml': new Uint8Array(8 * 1024 * 1024) }, { level: 9 }));
  assert.throws(() => checkArchive(honest, bounds), (err: Error) => err instanceof Refused && /a sheet of 8 MiB, where 1 MiB are read/.test(err.message));
});

test('the row limit is checked on the first sheet before it is parsed, on its rows that hold a value', () => {
  const bounds = { maxRows: 3, maxSheetBytes: 1024 * 1024, maxUnpackedBytes: 2 * 1024 * 1024 };
  const rows = (n: number) => new Map<number, (string | number)[]>(Array.from({ length: n + 1 }, (_, i) => [i + 1, i === 0 ? ['to'] : [`+3361234567${i}`]]));
  assert.doesNotThrow(() => checkArchive(xlsxWorkbook(rows(3), { sharedStrings: true }), bounds));
  assert.throws(() => checkArchive(xlsxWorkbook(rows(4), { sharedStrings: true }), bounds), (err: Error) => err instanceof Refused && /more than 3 rows/.test(err.message));
  assert.throws(() => checkArchive(xlsxWorkbook(rows(4)), bounds), /more than 3 rows/);
});

test('rows with a value are counted in a sheet fed in pieces of any size, namespace prefixes and all', () => {
  const xml = Buffer.from(
    '<?xml version="1.0"?><x:worksheet xmlns:x="urn"><x:sheetData>' +
      '<x:row r="1" spans="1:2"><x:c r="A1" t="s"><x:v>0</x:v></x:c></x:row>' +
      '<row r="2"/>' + // formatted, empty
      '<row r="3" customFormat="1"><c r="A3" s="2"/><c r="B3" s="2"/></row>' + // empty cells
      '<row r="4"><c r="A4" t="inlineStr"><is><t>Ann &gt; Bob</t></is></c></row>' +
      '<row r="5" ht="15"><c r="A5"><f>1+1</f><v>2</v></c></row>' +
      '<rowBreaks count="1"/><row r="6"><c r="A6"><v/></c></row>' +
      '</x:sheetData></x:worksheet>',
  );
  for (const size of [1, 2, 3, 7, 64, xml.length]) {
    const counter = rowCounter();
    for (let i = 0; i < xml.length; i += size) counter.push(xml.subarray(i, i + size));
    assert.equal(counter.count, 3, `pieces of ${size} bytes`);
  }
});

test('the first sheet is the workbook’s first <sheet>, through its relationship', () => {
  const workbook = '<workbook xmlns:r="urn"><sheets><sheet name="B" sheetId="2" r:id="rId7"/><sheet name="A" sheetId="1" r:id="rId1"/></sheets></workbook>';
  const rels = '<Relationships><Relationship Id="rId1" Target="worksheets/sheet1.xml" Type="t"/><Relationship Target="/xl/worksheets/second.xml" Id="rId7" Type="t"/></Relationships>';
  assert.equal(firstSheetPath(workbook, rels), 'xl/worksheets/second.xml');
  assert.equal(firstSheetPath(workbook, undefined), undefined);
});
