/**
 * A small CSV reader for campaign files: RFC 4180 quoting, CRLF or LF, a header row. Either a
 * `to,message` file, or a `to` column plus any others with a template: `{{first_name}}` is filled
 * from that column, row by row, with the same template syntax as the dashboard's campaign composer
 * (src/domain/message-template.ts).
 */
import { fillTemplate, rowValues, unknownPlaceholders } from '../../src/domain/message-template.ts';

export interface Row {
  /** 1-based line of the record in the file, for error messages. */
  line: number;
  to: string;
  message: string;
}

/** Splits CSV text into records of fields; quoted fields may hold commas, quotes ("") and newlines. */
export function parseCsvRecords(text: string): { line: number; fields: string[] }[] {
  const records: { line: number; fields: string[] }[] = [];
  let fields: string[] = [];
  let field = '';
  let quoted = false;
  let line = 1;
  let recordLine = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else {
        if (c === '\n') line++;
        field += c;
      }
    } else if (c === '"' && field === '') quoted = true;
    else if (c === ',') {
      fields.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      fields.push(field);
      if (fields.length > 1 || fields[0] !== '') records.push({ line: recordLine, fields });
      fields = [];
      field = '';
      line++;
      recordLine = line;
    } else field += c;
  }
  fields.push(field);
  if (fields.length > 1 || fields[0] !== '') records.push({ line: recordLine, fields });
  return records;
}

/**
 * The rows of a campaign file (columns found by the header, in any order): the `message` column,
 * or, with `template`, the template filled from each row's columns.
 */
export function parseCampaignCsv(text: string, template?: string): Row[] {
  const [header, ...records] = parseCsvRecords(text.replace(/^\uFEFF/, ''));
  if (!header) return [];
  const names = header.fields.map((f) => f.trim().toLowerCase());
  const to = names.indexOf('to');
  if (template !== undefined) {
    const unknown = unknownPlaceholders(template, header.fields);
    if (to < 0) throw new Error(`the CSV header must name the column "to", got: ${header.fields.join(',')}`);
    if (unknown.length > 0) throw new Error(`the template names columns the CSV does not have: ${unknown.join(', ')}`);
    return records.map((r) => ({ line: r.line, to: (r.fields[to] ?? '').trim(), message: fillTemplate(template, rowValues(header.fields, r.fields)).text }));
  }
  const message = names.indexOf('message');
  if (to < 0 || message < 0) throw new Error(`the CSV header must name the columns "to" and "message", got: ${header.fields.join(',')}`);
  return records.map((r) => ({ line: r.line, to: (r.fields[to] ?? '').trim(), message: r.fields[message] ?? '' }));
}
