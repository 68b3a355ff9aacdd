/**
 * Reads a campaign's CSV file as it arrives (the composer streams uploads of 100,000 rows through
 * it): the bytes are decoded and parsed chunk by chunk and each row is handed on at once, so the
 * file is never held whole in memory. Parsing is csv-parse's (quoting, escaped quotes, line breaks
 * inside quotes); this module adds what spreadsheets produce around it:
 *
 * - encodings: UTF-8 with or without a byte-order mark, and UTF-16 (Excel's "Unicode text") by its
 *   mark; anything else that is not valid UTF-8 is refused with a hint, never read as garbage;
 * - separators: `,`, `;` (spreadsheets in locales with a decimal comma) or a tab, chosen from the
 *   header line;
 * - a header row with a recipient column, found by its usual names or chosen by the owner
 *   (src/domain/recipient-column.ts), other columns free for templates;
 * - bounds: rows, bytes and the size of one row.
 */
import { parse, type Parser } from 'csv-parse';
import { AppError } from '../../errors/catalogue.ts';
import { findRecipientColumn, RECIPIENT_COLUMN_LABELS } from '../../domain/recipient-column.ts';

export interface CampaignFileLimits {
  /** Data rows (the header is not counted). */
  maxRows: number;
  /** Bytes of the whole file. */
  maxBytes: number;
  /** Characters of one row. */
  maxRowCharacters?: number;
  /** The recipient column the owner chose, by its header; absent, it is found by its name. */
  recipientColumn?: string | null;
}

export interface CampaignRow {
  /** The line of the file the row starts on (the header is line 1). */
  line: number;
  /** The row's cells, as many as it has. */
  cells: string[];
}

export interface CampaignFileSummary {
  headers: string[];
  /** The index of the recipient column in `headers`. */
  toColumn: number;
  /** Whether the recipient column was chosen by the owner or found by its name. */
  toColumnHow: 'chosen' | 'found';
  rows: number;
  separator: ',' | ';' | '\t';
  encoding: 'utf-8' | 'utf-16le' | 'utf-16be';
  /** `xlsx` for a workbook read by campaign-xlsx.ts (separator and encoding then mean nothing). */
  format?: 'csv' | 'xlsx';
}

const refuse = (message: string) => new AppError('invalid_request', message);

/**
 * A file whose recipient column is not clear: none of its columns has a usual name, or several
 * have. Carries the header, for the form to ask which column to use.
 */
export class RecipientColumnUnclear extends AppError {
  constructor(
    readonly columns: string[],
    /** Indexes in `columns` of those with a usual name. */
    readonly candidates: number[],
  ) {
    super(
      'recipient_column_unclear',
      candidates.length === 0
        ? `Which column holds the phone numbers? None is named ${RECIPIENT_COLUMN_LABELS.slice(0, 5).join(', ')} or the like; the file has: ${columnList(columns, 10) || 'nothing'}.`
        : `Which column holds the phone numbers? Several could: ${columnList(candidates.map((i) => columns[i]!), 10)}.`,
    );
  }
}

/** The recipient column of a header: chosen or found (recipient-column.ts); unclear, the owner is asked. */
export function recipientColumnOf(headers: string[], chosen: string | null | undefined): { index: number; how: 'chosen' | 'found' } {
  const found = findRecipientColumn(headers, chosen);
  if (!found.ok) throw new RecipientColumnUnclear(headers, found.candidates);
  return { index: found.index, how: found.how };
}

/**
 * The first `max` column names of a header, for a message: each cut to 40 characters, since a
 * header cell may be as long as a row (64 KiB) and the message is shown in the page.
 */
export function columnList(headers: readonly string[], max: number): string {
  return headers
    .slice(0, max)
    .map((h) => (h.length > 40 ? `${h.slice(0, 40)}…` : h))
    .join(', ');
}

/** The separator of a header line: the most frequent of `,`, `;` and tab outside quotes (`,` on a tie or none). */
export function sniffSeparator(headerLine: string): ',' | ';' | '\t' {
  const counts = { ',': 0, ';': 0, '\t': 0 };
  let quoted = false;
  for (const ch of headerLine) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && ch in counts) counts[ch as keyof typeof counts]++;
  }
  if (counts[';'] > counts[','] && counts[';'] >= counts['\t']) return ';';
  if (counts['\t'] > counts[','] && counts['\t'] > counts[';']) return '\t';
  return ',';
}

/**
 * Streams `source` through the parser, calling `onRow` for every data row in order (awaited, so a
 * slow consumer slows the reading). Throws `invalid_request` with a message for the whole file's
 * problems: empty, over a limit, not UTF-8 or UTF-16, malformed CSV (with its line);
 * `RecipientColumnUnclear` when the recipient column is not clear.
 */
export async function readCampaignCsv(
  source: AsyncIterable<Uint8Array | string>,
  limits: CampaignFileLimits,
  onRow: (row: CampaignRow) => void | Promise<void>,
  onHeaders?: (headers: string[], toColumn: number) => void,
): Promise<CampaignFileSummary> {
  const maxRowCharacters = limits.maxRowCharacters ?? 64 * 1024;
  let decoder: TextDecoder | null = null;
  let encoding: CampaignFileSummary['encoding'] = 'utf-8';
  let head = Buffer.alloc(0);
  let bytes = 0;
  let pending = '';
  let parser: Parser | null = null;
  let separator: CampaignFileSummary['separator'] = ',';
  let headers: string[] | null = null;
  let toColumn = -1;
  let toColumnHow: CampaignFileSummary['toColumnHow'] = 'found';
  let rows = 0;
  let previousEnd = 0;
  let previousEmpty = 0;

  const records: { record: string[]; info: { lines: number; empty_lines: number } }[] = [];
  const startParser = (firstText: string) => {
    separator = sniffSeparator(firstText.split(/\r\n|\n|\r/, 1)[0] ?? '');
    parser = parse({
      delimiter: separator,
      // Spreadsheets and editors mix line endings; each is the end of a row.
      record_delimiter: ['\r\n', '\n', '\r'],
      relax_column_count: true,
      skip_empty_lines: true,
      info: true,
      max_record_size: maxRowCharacters,
    });
    // Errors also come back through write's callback and 'end'; this keeps them from being thrown
    // as an unhandled 'error' event.
    parser.on('error', () => {});
    parser.on('readable', () => {
      let r: { record: string[]; info: { lines: number; empty_lines: number } } | null;
      while ((r = parser!.read()) !== null) records.push(r);
    });
  };

  const drain = async () => {
    for (const { record, info } of records.splice(0)) {
      // The row starts after the previous one's last line and any empty lines skipped since.
      const line = previousEnd + 1 + (info.empty_lines - previousEmpty);
      previousEnd = info.lines;
      previousEmpty = info.empty_lines;
      if (headers === null) {
        headers = record.map((h) => h.trim());
        ({ index: toColumn, how: toColumnHow } = recipientColumnOf(headers, limits.recipientColumn));
        onHeaders?.(headers, toColumn);
        continue;
      }
      if (record.every((c) => c.trim() === '')) continue;
      rows++;
      if (rows > limits.maxRows) throw refuse(`The file has more than ${limits.maxRows.toLocaleString('en')} rows; split it into several campaigns.`);
      await onRow({ line, cells: record });
    }
  };

  const write = async (text: string) => {
    if (!parser) {
      // The separator is chosen from the header line: wait for all of it (or the end of the file).
      // Only the new text is searched for a line break, so a file without one costs one pass over
      // its bytes, not one pass over everything gathered so far per chunk.
      const ended = /[\r\n]/.test(text);
      pending += text;
      if (!ended) {
        if (pending.length > maxRowCharacters) throw refuse(`The file cannot be read near line 1: a row is longer than ${maxRowCharacters.toLocaleString('en')} characters.`);
        return;
      }
      startParser(pending);
      text = pending;
      pending = '';
    }
    await new Promise<void>((resolve, reject) => parser!.write(text, (err) => (err ? reject(err) : resolve())));
    await drain();
  };

  try {
    for await (const chunk of source) {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      bytes += buf.length;
      if (bytes > limits.maxBytes) throw refuse(`The file is larger than ${Math.round(limits.maxBytes / 1024 / 1024)} MiB; split it into several campaigns.`);
      let data = buf;
      if (!decoder) {
        head = Buffer.concat([head, buf]);
        if (head.length < 3) continue;
        data = head;
        if (data[0] === 0xff && data[1] === 0xfe) [encoding, data] = ['utf-16le', data.subarray(2)];
        else if (data[0] === 0xfe && data[1] === 0xff) [encoding, data] = ['utf-16be', data.subarray(2)];
        else if (data[0] === 0xef && data[1] === 0xbb && data[2] === 0xbf) data = data.subarray(3);
        decoder = new TextDecoder(encoding, { fatal: true });
      }
      await write(decoder.decode(data, { stream: true }));
    }
    if (!decoder && head.length > 0) {
      decoder = new TextDecoder('utf-8', { fatal: true });
      await write(decoder.decode(head, { stream: true }));
    }
    if (decoder) {
      const rest = decoder.decode();
      if (parser) {
        if (rest) await write(rest);
      } else {
        // A file of one line (the header alone, without a line break).
        const all = pending + rest;
        pending = '';
        if (all.trim() !== '') {
          startParser(all);
          await write(all);
        }
      }
    }
    if (parser) {
      await new Promise<void>((resolve, reject) => {
        (parser as Parser).once('end', resolve);
        (parser as Parser).once('error', reject);
        (parser as Parser).end();
      });
      await drain();
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    if (err instanceof TypeError && (err as { code?: string }).code === 'ERR_ENCODING_INVALID_ENCODED_DATA') {
      throw refuse('The file is not UTF-8 text. Save it as "CSV UTF-8" (or as Unicode text) and upload it again.');
    }
    const e = err as { code?: string; lines?: number; message?: string };
    if (typeof e.code === 'string' && e.code.startsWith('CSV_')) {
      const where = typeof e.lines === 'number' ? ` near line ${e.lines}` : '';
      const why = e.code === 'CSV_QUOTE_NOT_CLOSED' ? 'a quote is opened and never closed' : e.code === 'CSV_MAX_RECORD_SIZE' ? `a row is longer than ${maxRowCharacters.toLocaleString('en')} characters` : 'it is not valid CSV';
      throw refuse(`The file cannot be read${where}: ${why}.`);
    }
    throw err;
  }
  if (headers === null) throw refuse('The file is empty.');
  return { headers, toColumn, toColumnHow, rows, separator, encoding };
}
