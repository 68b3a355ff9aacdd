/**
 * Reads a campaign file with the dashboard composer's own CSV reader
 * (src/services/campaigns/campaign-file.ts), so that a file one accepts the other reads alike:
 * RFC 4180 quoting, CRLF, LF or CR, a `,`, `;` or tab separator chosen from the header, UTF-8 with
 * or without a byte-order mark or UTF-16, and a header row naming a `to` column (any case). Either
 * a `message` column, or any other columns with a template: `{{first_name}}` is filled from that
 * column, row by row, with the same template syntax as the composer (src/domain/message-template.ts).
 */
import { columnKey, fillTemplate, rowValues, unknownPlaceholders } from '../../src/domain/message-template.ts';
import { readCampaignCsv } from '../../src/services/campaigns/campaign-file.ts';

export interface Row {
  /** 1-based line of the record in the file, for error messages. */
  line: number;
  to: string;
  message: string;
}

/** No bound but memory: the example reads a file the operator chose, not an upload. */
const LIMITS = { maxRows: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER };

/**
 * The rows of a campaign file (columns found by the header, in any order): the `message` column,
 * or, with `template`, the template filled from each row's columns. `file` is the file's bytes (or
 * text), whole or as chunks.
 */
export async function readCampaignFile(file: Uint8Array | string | AsyncIterable<Uint8Array | string>, template?: string): Promise<Row[]> {
  const chunks = typeof file === 'string' || file instanceof Uint8Array ? [file] : file;
  const rows: Row[] = [];
  let to = -1;
  let fill: (cells: string[]) => string = () => '';
  const useHeader = (headers: string[]) => {
    to = headers.findIndex((h) => columnKey(h) === 'to');
    if (template !== undefined) {
      const unknown = unknownPlaceholders(template, headers);
      if (unknown.length > 0) throw new Error(`the template names columns the CSV does not have: ${unknown.join(', ')}`);
      fill = (cells) => fillTemplate(template, rowValues(headers, cells)).text;
      return;
    }
    const message = headers.findIndex((h) => columnKey(h) === 'message');
    if (message < 0) throw new Error(`the CSV header must name the columns "to" and "message", got: ${headers.join(',')}`);
    fill = (cells) => cells[message] ?? '';
  };
  const source = (async function* () {
    yield* chunks;
  })();
  await readCampaignCsv(source, LIMITS, ({ line, cells }) => void rows.push({ line, to: (cells[to] ?? '').trim(), message: fill(cells) }), useHeader);
  return rows;
}
