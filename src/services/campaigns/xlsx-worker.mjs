// One XLSX campaign file read on its own thread (campaign-xlsx.ts starts it and hands it the
// upload): parsing a 100,000-row sheet takes about a second of CPU, which on the main thread held
// up every other request of the process for as long. Plain JavaScript because a worker thread does
// not inherit the TypeScript loader that bin/pigeon registers for the main thread.
//
// The archive passes xlsx-archive.mjs's checks first (its sizes, declared and real, and its row
// count); only then does read-excel-file unpack and parse it, its size known to be bounded. The
// rows go to the main thread a batch at a time, as it asks for them.
//
// Messages to the main thread: { type: 'refused', message } (the file is refused: bad input),
// { type: 'headers', headers }, then { type: 'rows', rows: [{ line, cells }], last } for each
// message the main thread sends.
import { parentPort, workerData } from 'node:worker_threads';
import { readSheet } from 'read-excel-file/node';
import { checkArchive, Refused, tooManyRows, UNREADABLE } from './xlsx-archive.mjs';

const { maxRows, maxSheetBytes, maxUnpackedBytes, batchRows } = workerData;
const OLD_EXCEL = 'This is an old Excel (.xls) file: save it as “Excel Workbook (.xlsx)” or as “CSV UTF-8”.';

function cellText(value) {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? '' : value.toISOString().slice(0, 10);
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  return String(value);
}

async function read(buffer) {
  const file = Buffer.from(buffer);
  if (file.length === 0) throw new Refused('The file is empty.');
  // An old binary Excel file (OLE2 compound document).
  if (file.length >= 8 && file.readUInt32BE(0) === 0xd0cf11e0 && file.readUInt32BE(4) === 0xa1b11ae1) {
    throw new Refused(OLD_EXCEL);
  }
  checkArchive(file, { maxRows, maxSheetBytes, maxUnpackedBytes });
  let sheet;
  try {
    // Numbers are kept as written: a phone number stays exact.
    sheet = await readSheet(file, { parseNumber: (s) => s });
  } catch (err) {
    if (err?.code === 'XLS_FILE_NOT_SUPPORTED') throw new Refused(OLD_EXCEL);
    throw new Refused(UNREADABLE);
  }
  const headerIndex = sheet.findIndex((r) => r.some((c) => cellText(c).trim() !== ''));
  if (headerIndex < 0) throw new Refused('The file is empty.');
  // The main thread checks the header (a `to` column, the template's columns) and asks for the rows.
  parentPort.postMessage({ type: 'headers', headers: sheet[headerIndex].map((c) => cellText(c).trim()) });
  let count = 0;
  let next = headerIndex + 1;
  // The main thread asks for each batch once it has handled the previous one: the rows are
  // copied to it a batch at a time, never all at once.
  const batch = () => {
    const rows = [];
    for (; next < sheet.length && rows.length < batchRows; next++) {
      const cells = sheet[next].map(cellText);
      sheet[next] = null;
      if (cells.every((c) => c.trim() === '')) continue;
      if (++count > maxRows) throw new Refused(tooManyRows(maxRows));
      rows.push({ line: next + 1, cells });
    }
    parentPort.postMessage({ type: 'rows', rows, last: next >= sheet.length });
  };
  parentPort.on('message', () => {
    try {
      batch();
    } catch (err) {
      parentPort.postMessage({ type: 'refused', message: err instanceof Refused ? err.message : UNREADABLE });
    }
  });
}

read(workerData.file).catch((err) => {
  if (err instanceof Refused) parentPort.postMessage({ type: 'refused', message: err.message });
  else throw err;
});
