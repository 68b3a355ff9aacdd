import assert from 'node:assert/strict';
import { test } from 'node:test';
import { zipSync } from 'fflate';
import { readCampaignXlsx } from './campaign-xlsx.ts';
import type { CampaignRow } from './campaign-file.ts';
import { xlsxWorkbook } from '../../../test/helpers/xlsx.ts';

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

test('refused whole: no `to` column, too many rows, not a workbook, an old .xls, too large once unpacked', async () => {
  await assert.rejects(read(xlsxWorkbook(new Map([[1, ['phone']], [2, ['+33612345678']]]))), /one of them `to`/);
  await assert.rejects(read(xlsxWorkbook(new Map([[1, ['to']], [2, ['+1']], [3, ['+2']]])), 1), /more than 1 rows/);
  await assert.rejects(read(Buffer.from('to\n+33612345678\n')), /not an XLSX workbook/);
  await assert.rejects(read(Buffer.concat([Buffer.from('d0cf11e0a1b11ae1', 'hex'), Buffer.alloc(600)])), /not an XLSX workbook|old Excel/);
  await assert.rejects(read(Buffer.alloc(0)), /empty/);
  // 300 MiB of zeros deflate to about 300 KiB: refused from the sizes the archive declares.
  const bomb = Buffer.from(zipSync({ 'xl/worksheets/sheet1.xml': new Uint8Array(300 * 1024 * 1024) }, { level: 9 }));
  assert.ok(bomb.length < 1024 * 1024);
  await assert.rejects(read(bomb), /too large once unpacked/);
});
