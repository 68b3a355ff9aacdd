import assert from 'node:assert/strict';
import { test } from 'node:test';
import { csvCell, csvLine } from './csv-cell.ts';

test('cells that a spreadsheet would run as a formula are prefixed with a quote', () => {
  assert.equal(csvCell('=1+1'), "'=1+1");
  assert.equal(csvCell('+33612345678'), "'+33612345678");
  assert.equal(csvCell('-2'), "'-2");
  assert.equal(csvCell('@SUM(A1)'), "'@SUM(A1)");
  assert.equal(csvCell('\t=cmd'), "'\t=cmd");
  assert.equal(csvCell('plain'), 'plain');
  assert.equal(csvCell('a=b'), 'a=b');
});

test('separators, quotes and line breaks are quoted; null is empty', () => {
  assert.equal(csvCell('a,b'), '"a,b"');
  assert.equal(csvCell('say "hi"'), '"say ""hi"""');
  assert.equal(csvCell('=HYPERLINK("x")'), '"\'=HYPERLINK(""x"")"');
  assert.equal(csvCell('two\nlines'), '"two\nlines"');
  assert.equal(csvCell(null), '');
  assert.equal(csvCell(3), '3');
  assert.equal(csvLine(['id', '+1', null]), "id,'+1,\r\n");
});
