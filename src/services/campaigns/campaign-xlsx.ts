/**
 * Reads a campaign's XLSX file (its first sheet) with read-excel-file, handing each data row on
 * as the CSV reader does (campaign-file.ts), with the row's number in the sheet as its line.
 *
 * An XLSX file is a ZIP archive and must be read whole: the upload is gathered up to the byte
 * limit, and the sizes its archive declares, uncompressed, must stay under
 * `XLSX_MAX_UNCOMPRESSED_BYTES` before anything is inflated (a small file that would inflate to
 * gigabytes is refused). Numbers are kept as written (a phone number stays exact), dates become
 * `YYYY-MM-DD`, booleans `TRUE`/`FALSE`.
 */
import { unzipSync } from 'fflate';
import { readSheet } from 'read-excel-file/node';
import { AppError } from '../../errors/catalogue.ts';
import { columnKey } from '../../domain/message-template.ts';
import { columnList, type CampaignFileLimits, type CampaignFileSummary, type CampaignRow } from './campaign-file.ts';

/** What the parts of one XLSX file may declare, uncompressed, in all. */
export const XLSX_MAX_UNCOMPRESSED_BYTES = 200 * 1024 * 1024;

const refuse = (message: string) => new AppError('invalid_request', message);

function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? '' : value.toISOString().slice(0, 10);
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  return String(value);
}

export async function readCampaignXlsx(
  source: AsyncIterable<Uint8Array | string>,
  limits: CampaignFileLimits,
  onRow: (row: CampaignRow) => void | Promise<void>,
  onHeaders?: (headers: string[]) => void,
): Promise<CampaignFileSummary> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of source) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    bytes += buf.length;
    if (bytes > limits.maxBytes) throw refuse(`The file is larger than ${Math.round(limits.maxBytes / 1024 / 1024)} MiB; split it into several campaigns.`);
    chunks.push(buf);
  }
  if (bytes === 0) throw refuse('The file is empty.');
  const file = Buffer.concat(chunks);
  chunks.length = 0;
  let declared = 0;
  try {
    // The filter sees each entry's declared sizes and inflates nothing.
    unzipSync(file, {
      filter: (entry) => {
        declared += entry.originalSize;
        return false;
      },
    });
  } catch {
    throw refuse('The file is not an XLSX workbook. Save the sheet as “Excel Workbook (.xlsx)” or as “CSV UTF-8”.');
  }
  if (declared > XLSX_MAX_UNCOMPRESSED_BYTES) throw refuse('The workbook is too large once unpacked; save the sheet as “CSV UTF-8” and upload that.');
  let rows: unknown[][];
  try {
    rows = (await readSheet(file, { parseNumber: (s: string) => s })) as unknown[][];
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'XLS_FILE_NOT_SUPPORTED') throw refuse('This is an old Excel (.xls) file: save it as “Excel Workbook (.xlsx)” or as “CSV UTF-8”.');
    throw refuse('The file is not a readable XLSX workbook. Save the sheet as “Excel Workbook (.xlsx)” or as “CSV UTF-8”.');
  }
  const headerIndex = rows.findIndex((r) => r.some((c) => cellText(c).trim() !== ''));
  if (headerIndex < 0) throw refuse('The file is empty.');
  const headers = rows[headerIndex]!.map((c) => cellText(c).trim());
  const toColumn = headers.findIndex((h) => columnKey(h) === 'to');
  if (toColumn < 0) throw refuse(`The first row must name the columns, one of them \`to\` (the recipient); it has: ${columnList(headers, 10) || 'nothing'}.`);
  onHeaders?.(headers);
  let count = 0;
  for (let i = headerIndex + 1; i < rows.length; i++) {
    const cells = rows[i]!.map(cellText);
    if (cells.every((c) => c.trim() === '')) continue;
    count++;
    if (count > limits.maxRows) throw refuse(`The file has more than ${limits.maxRows.toLocaleString('en')} rows; split it into several campaigns.`);
    await onRow({ line: i + 1, cells });
  }
  return { headers, toColumn, rows: count, separator: ',', encoding: 'utf-8', format: 'xlsx' };
}
