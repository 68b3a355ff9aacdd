// The checks an XLSX campaign file passes before read-excel-file parses it (xlsx-worker.mjs runs
// them on its thread): none keeps an inflated part in memory longer than it takes to count it.
//
// 1. The sizes the archive's directory declares, against the bounds: refused before anything is
//    inflated.
// 2. The parts as a streaming reader (read-excel-file's) meets them, each inflated by zlib with no
//    more room than the bounds leave it, since a part may declare less than it holds; on the way,
//    the rows of each sheet that hold a value are counted, and the first sheet's count is checked
//    against the row limit.
// Plain JavaScript, for the worker thread (see xlsx-worker.mjs).
import { inflateRawSync } from 'node:zlib';
import { Unzip, unzipSync } from 'fflate';

const MiB = 1024 * 1024;
/** workbook.xml and its relationships are kept (to find the first sheet) up to this size. */
const MAX_KEPT_BYTES = MiB;

/** A refusal of the file, with the message for its owner. */
export class Refused extends Error {}
export const NOT_XLSX = 'The file is not an XLSX workbook. Save the sheet as “Excel Workbook (.xlsx)” or as “CSV UTF-8”.';
export const UNREADABLE = 'The file is not a readable XLSX workbook. Save the sheet as “Excel Workbook (.xlsx)” or as “CSV UTF-8”.';
export const tooManyRows = (maxRows) => `The file has more than ${maxRows.toLocaleString('en')} rows; split it into several campaigns.`;

/** The parts read-excel-file unpacks (its own filter): every XML part and relationship list. */
const unpacked = (name) => name.endsWith('.xml') || name.endsWith('.xml.rels');
const isSheet = (name) => name.startsWith('xl/worksheets/') && name.endsWith('.xml');

function tooLarge(what) {
  return new Refused(
    `The workbook is too large once unpacked (${what}). Keep only the campaign's sheet, rows and columns, or save the sheet as “CSV UTF-8” and upload that.`,
  );
}

/**
 * Counts, in a sheet's XML as it streams by, the `<row>` elements that hold a value (a `<v>` or an
 * inline `<is>`): rows of empty or merely formatted cells do not count, as the reader skips them.
 * Tags are found with indexOf (memchr), so a 48 MiB sheet is counted in a few tens of ms.
 */
export function rowCounter() {
  const TEXT = 0;
  const NAME = 1;
  const TAG = 2;
  let state = TEXT;
  const name = new Uint8Array(32);
  let nameLength = 0;
  let closing = false;
  let last = 0;
  let inRow = false;
  let valued = false;
  let count = 0;
  // The tag's local name (after any namespace prefix) is `row`, `v` or `is`.
  const local = () => {
    let start = 0;
    for (let k = 0; k < nameLength; k++) if (name[k] === 58) start = k + 1;
    const n = nameLength - start;
    if (n === 3 && name[start] === 114 && name[start + 1] === 111 && name[start + 2] === 119) return 'row';
    if (n === 1 && name[start] === 118) return 'v';
    if (n === 2 && name[start] === 105 && name[start + 1] === 115) return 'is';
    return '';
  };
  const tagEnd = (selfClosing) => {
    const tag = local();
    if (tag === 'row') {
      if (closing) {
        if (inRow && valued) count++;
        inRow = false;
      } else if (!selfClosing) {
        inRow = true;
        valued = false;
      }
    } else if (tag !== '' && inRow && !closing && !selfClosing) {
      valued = true;
    }
  };
  return {
    get count() {
      return count;
    },
    push(bytes) {
      let i = 0;
      while (i < bytes.length) {
        if (state === TEXT) {
          const at = bytes.indexOf(60, i);
          if (at < 0) return;
          state = NAME;
          nameLength = 0;
          closing = false;
          i = at + 1;
        } else if (state === NAME) {
          const b = bytes[i++];
          if (b === 47 && nameLength === 0 && !closing) closing = true;
          else if (b === 62) {
            tagEnd(false);
            state = TEXT;
          } else if (b === 32 || b === 9 || b === 10 || b === 13 || b === 47) {
            state = TAG;
            last = b;
          } else if (nameLength < name.length) name[nameLength++] = b;
        } else {
          const at = bytes.indexOf(62, i);
          if (at < 0) {
            last = bytes[bytes.length - 1];
            return;
          }
          tagEnd((at > i ? bytes[at - 1] : last) === 47);
          state = TEXT;
          i = at + 1;
        }
      }
    },
  };
}

/** The first sheet's part, as read-excel-file finds it: the workbook's first `<sheet>`, through its relationship. */
export function firstSheetPath(workbook, rels) {
  if (workbook === undefined || rels === undefined) return undefined;
  const sheet = /<(?:[\w.-]+:)?sheet\s[^>]*>/.exec(workbook)?.[0];
  const id = sheet && /\s(?:[\w.-]+:)?id\s*=\s*"([^"]*)"/.exec(sheet)?.[1];
  if (!id) return undefined;
  for (const [tag] of rels.matchAll(/<(?:[\w.-]+:)?Relationship\s[^>]*>/g)) {
    if (/\sId\s*=\s*"([^"]*)"/.exec(tag)?.[1] !== id) continue;
    const target = /\sTarget\s*=\s*"([^"]*)"/.exec(tag)?.[1];
    if (!target) return undefined;
    return target.startsWith('/') ? target.slice(1) : `xl/${target}`;
  }
  return undefined;
}

/** Refuses an archive whose parts would unpack to more than the bounds, from its directory and then from its content. */
export function checkArchive(file, { maxRows, maxSheetBytes, maxUnpackedBytes }) {
  const exceeded = (name, size) =>
    tooLarge(isSheet(name) ? `a sheet of ${size === undefined ? 'more than ' : ''}${Math.round((size ?? maxSheetBytes) / MiB)} MiB, where ${Math.round(maxSheetBytes / MiB)} MiB are read` : `more than ${Math.round(maxUnpackedBytes / MiB)} MiB of sheets and strings`);
  let declared = 0;
  try {
    // The filter sees each entry's declared sizes and inflates nothing.
    unzipSync(file, {
      filter: (entry) => {
        if (!unpacked(entry.name)) return false;
        if (isSheet(entry.name) && entry.originalSize > maxSheetBytes) throw exceeded(entry.name, entry.originalSize);
        declared += entry.originalSize;
        if (declared > maxUnpackedBytes) throw exceeded('');
        return false;
      },
    });
  } catch (err) {
    if (err instanceof Refused) throw err;
    throw new Refused(NOT_XLSX);
  }

  // The parts as they really inflate, in the order a streaming reader (read-excel-file's) meets
  // them: a part may declare less than it holds. Each compressed part is inflated whole by zlib,
  // with no more room than the bounds leave it, its rows counted and its bytes dropped.
  let total = 0;
  const counters = new Map();
  const kept = new Map();
  let failure = null;
  const room = (name) => Math.min(isSheet(name) ? maxSheetBytes : Infinity, maxUnpackedBytes - total);
  class BoundedInflate {
    // DEFLATE, the method of every compressed XLSX part.
    static compression = 8;
    constructor(name) {
      this.name = name;
      this.parts = [];
    }
    push(chunk, final) {
      if (chunk.length > 0) this.parts.push(chunk);
      if (!final) return;
      const input = this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts);
      this.parts = [];
      let output;
      try {
        output = inflateRawSync(input, { maxOutputLength: Math.max(0, room(this.name)) + 1 });
      } catch (err) {
        this.ondata(err, null, true);
        return;
      }
      this.ondata(null, output, true);
    }
  }
  const unzip = new Unzip((entry) => {
    if (entry.name.endsWith('/') || !unpacked(entry.name)) return;
    const name = entry.name;
    const counter = isSheet(name) ? rowCounter() : null;
    if (counter) counters.set(name, counter);
    const keep = name === 'xl/workbook.xml' || name === 'xl/_rels/workbook.xml.rels' ? [] : null;
    let size = 0;
    entry.ondata = (err, chunk, final) => {
      if (failure) return;
      if (err) {
        failure = err.code === 'ERR_BUFFER_TOO_LARGE' ? exceeded(name) : new Refused(UNREADABLE);
        return;
      }
      // Stored (uncompressed) parts arrive in pieces, compressed ones whole.
      if (chunk.length > room(name) - size) {
        failure = exceeded(name);
        return;
      }
      size += chunk.length;
      counter?.push(chunk);
      if (keep && size <= MAX_KEPT_BYTES) keep.push(chunk);
      if (final) {
        total += size;
        if (keep && size <= MAX_KEPT_BYTES) kept.set(name, Buffer.concat(keep).toString('utf8'));
      }
    };
    entry.start();
  });
  unzip.register(BoundedInflate);
  try {
    unzip.push(file, true);
  } catch {
    failure ??= new Refused(UNREADABLE);
  }
  if (failure) throw failure;

  const first = firstSheetPath(kept.get('xl/workbook.xml'), kept.get('xl/_rels/workbook.xml.rels'));
  const rows = first !== undefined ? counters.get(first)?.count : undefined;
  // The header is one of the rows that hold a value.
  if (rows !== undefined && rows - 1 > maxRows) throw new Refused(tooManyRows(maxRows));
}
