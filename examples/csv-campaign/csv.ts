/**
 * Reads a campaign file with the dashboard composer's own readers
 * (src/services/campaigns/campaign-file.ts for CSV, campaign-xlsx.ts for XLSX), so that a file one
 * accepts the other reads alike: RFC 4180 quoting, CRLF, LF or CR, a `,`, `;` or tab separator
 * chosen from the header, UTF-8 with or without a byte-order mark or UTF-16, or an XLSX
 * workbook's first sheet. The composer's rules for contact lists apply too:
 *
 * - the phone numbers column is found by its usual names (to, phone, phone number, mobile, cell,
 *   msisdn, number, recipient; any case and spacing), or named with `column`; with none or several
 *   the file is refused, naming the candidates;
 * - with `country`, numbers without `+` are national numbers of it (`07400 123401` in GB), sent
 *   in E.164; a number that cannot be read is sent as written, for the API to reject with its line;
 * - a number repeated in the file is sent once (the first row's), unless `everyRow`;
 * - `optOutLine` adds "Reply STOP to opt out" on a line of its own to each message.
 *
 * Either a `message` column, or any other columns with a template: `{{first_name}}` is filled
 * from that column, row by row, with the same template syntax as the composer
 * (src/domain/message-template.ts).
 */
import { columnKey, fillTemplate, OPT_OUT_LINE, rowValues, unknownPlaceholders } from '../../src/domain/message-template.ts';
import { countryByCode, readPhoneNumber } from '../../src/domain/national-number.ts';
import { readCampaignCsv, type CampaignFileLimits, type CampaignRow } from '../../src/services/campaigns/campaign-file.ts';
import { readCampaignXlsx } from '../../src/services/campaigns/campaign-xlsx.ts';

export interface Row {
  /** 1-based line of the record in the file (its row in the sheet), for error messages. */
  line: number;
  to: string;
  message: string;
}

export interface ReadOptions {
  template?: string;
  /** The phone numbers column's header; absent, it is found by its name. */
  column?: string;
  /** ISO 3166-1 alpha-2 code of the country of numbers written without `+`. */
  country?: string;
  /** Send every row, even one whose number an earlier row has. */
  everyRow?: boolean;
  /** Add "Reply STOP to opt out" to each message. */
  optOutLine?: boolean;
  format?: 'csv' | 'xlsx';
}

export interface CampaignFile {
  rows: Row[];
  /** Rows skipped because an earlier row has the same number. */
  duplicates: Row[];
  /** The phone numbers column's header. */
  column: string;
}

/** No bound but memory: the example reads a file the operator chose, not an upload. */
const LIMITS = { maxRows: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER };
/** A workbook is gathered whole in a buffer reserved at its bound: the composer's 20 MiB. */
const XLSX_MAX_BYTES = 20 * 1024 * 1024;

/**
 * The rows of a campaign file (columns found by the header, in any order): the `message` column,
 * or, with `template`, the template filled from each row's columns. `file` is the file's bytes (or
 * text), whole or as chunks.
 */
export async function readCampaign(file: Uint8Array | string | AsyncIterable<Uint8Array | string>, options: ReadOptions = {}): Promise<CampaignFile> {
  const { template, everyRow = false, optOutLine = false } = options;
  if (options.country !== undefined && !countryByCode(options.country)) throw new Error(`unknown country code: ${options.country}`);
  const chunks = typeof file === 'string' || file instanceof Uint8Array ? [file] : file;
  const result: CampaignFile = { rows: [], duplicates: [], column: '' };
  const seen = new Set<string>();
  let to = -1;
  let fill: (cells: string[]) => string = () => '';
  const useHeader = (headers: string[], column: number) => {
    to = column;
    result.column = headers[column] ?? '';
    if (template !== undefined) {
      const unknown = unknownPlaceholders(template, headers);
      if (unknown.length > 0) throw new Error(`the template names columns the file does not have: ${unknown.join(', ')}`);
      fill = (cells) => fillTemplate(template, rowValues(headers, cells)).text;
      return;
    }
    const message = headers.findIndex((h) => columnKey(h) === 'message');
    if (message < 0) throw new Error(`the file's header must name a "message" column (or use a template), got: ${headers.join(',')}`);
    fill = (cells) => cells[message] ?? '';
  };
  const onRow = ({ line, cells }: CampaignRow) => {
    const written = (cells[to] ?? '').trim();
    const number = readPhoneNumber(written, options.country);
    const text = fill(cells);
    const row = { line, to: number.ok ? number.e164 : written, message: optOutLine ? `${text}\n${OPT_OUT_LINE}` : text };
    if (number.ok && seen.has(number.e164) && !everyRow) return void result.duplicates.push(row);
    if (number.ok) seen.add(number.e164);
    result.rows.push(row);
  };
  const source = (async function* () {
    yield* chunks;
  })();
  const limits: CampaignFileLimits = { ...LIMITS, recipientColumn: options.column ?? null };
  if (options.format === 'xlsx') await readCampaignXlsx(source, { ...limits, maxBytes: XLSX_MAX_BYTES }, onRow, useHeader);
  else await readCampaignCsv(source, limits, onRow, useHeader);
  return result;
}

/** The rows to send, as `readCampaign` reads them (a string second argument is the template). */
export async function readCampaignFile(file: Uint8Array | string | AsyncIterable<Uint8Array | string>, options?: string | ReadOptions): Promise<Row[]> {
  return (await readCampaign(file, typeof options === 'string' ? { template: options } : options)).rows;
}
