/**
 * Reads a campaign's XLSX file (its first sheet) with read-excel-file, handing each data row on
 * as the CSV reader does (campaign-file.ts), with the row's number in the sheet as its line.
 *
 * An XLSX file is a ZIP archive and must be read whole. The upload is gathered into one buffer
 * that grows in place as chunks arrive (a resizable ArrayBuffer: no chunk is kept, nothing is
 * copied again), up to the byte limit, and that buffer is handed over, not copied, to a worker
 * thread (xlsx-worker.mjs), one workbook at a time per process (`xlsxReads`, file-reads.ts): the
 * parse takes about a second of CPU for 100,000 rows, which on the main thread held up every other
 * request for as long. Before parsing, the worker refuses an archive whose sheet would unpack to
 * more than `XLSX_MAX_SHEET_BYTES`, or whose parts read would unpack to more than
 * `XLSX_MAX_UNPACKED_BYTES` in all, judged from the sizes the archive declares and then from its
 * parts inflated as a stream and counted (nothing is kept), and one whose first sheet has more
 * rows with a value than the limit. Numbers are kept as written (a phone number stays exact),
 * dates become `YYYY-MM-DD`, booleans `TRUE`/`FALSE`.
 */
import { Worker } from 'node:worker_threads';
import { AppError } from '../../errors/catalogue.ts';
import { recipientColumnOf, type CampaignFileLimits, type CampaignFileSummary, type CampaignRow } from './campaign-file.ts';
import { xlsxReads } from './file-reads.ts';

const MiB = 1024 * 1024;

/**
 * What the first sheet's XML may unpack to. A cell takes 30 to 45 bytes of XML (its reference,
 * type, style and value; the text of a shared string is counted apart), a row about 30 more: a
 * 100,000-row sheet of 5 columns is 20 MiB (measured), of a dozen about 48 MiB. The CSV limit
 * (20 MiB) allows about 200 bytes per row, the same dozen short columns.
 */
export const XLSX_MAX_SHEET_BYTES = 48 * MiB;
/** What every part read-excel-file unpacks may come to in all: the sheets, the shared strings (3 MiB for 100,000 rows of names), the styles. */
export const XLSX_MAX_UNPACKED_BYTES = 64 * MiB;
/**
 * The worker's heap: a sheet at the bound parses into about 300 MiB of strings and rows (measured).
 * Past it the worker ends and the file is refused; the process is untouched.
 */
const WORKER_HEAP_MB = 512;
/** Rows copied from the worker per message. */
const BATCH_ROWS = 1000;

const refuse = (message: string) => new AppError('invalid_request', message);

type WorkerMessage = { type: 'refused'; message: string } | { type: 'headers'; headers: string[] } | { type: 'rows'; rows: CampaignRow[]; last: boolean };

/** A resizable ArrayBuffer (ES2024, in Node since 20), which the configured TypeScript library does not describe yet. */
interface ResizableArrayBuffer extends ArrayBuffer {
  resize(byteLength: number): void;
}
const ResizableArrayBuffer = ArrayBuffer as unknown as new (byteLength: number, options: { maxByteLength: number }) => ResizableArrayBuffer;

/** The upload in one buffer that grows in place; over `maxBytes`, refused. */
async function gather(source: AsyncIterable<Uint8Array | string>, maxBytes: number): Promise<ArrayBuffer> {
  const file = new ResizableArrayBuffer(0, { maxByteLength: maxBytes });
  for await (const chunk of source) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    const at = file.byteLength;
    if (at + bytes.byteLength > maxBytes) throw refuse(`The file is larger than ${Math.round(maxBytes / MiB)} MiB; split it into several campaigns.`);
    file.resize(at + bytes.byteLength);
    new Uint8Array(file, at, bytes.byteLength).set(bytes);
  }
  return file;
}

/** The worker's messages, one at a time; rejects when the worker fails or the signal is aborted. */
function inbox(worker: Worker, signal?: AbortSignal): () => Promise<WorkerMessage> {
  const queue: WorkerMessage[] = [];
  let failure: unknown = null;
  let wake: (() => void) | null = null;
  const fail = (err: unknown) => {
    failure ??= err;
    wake?.();
  };
  worker.on('message', (m: WorkerMessage) => {
    queue.push(m);
    wake?.();
  });
  worker.on('error', (err: Error & { code?: string }) =>
    // A sheet within the bounds fits the heap; one that does not is refused like any other too large.
    fail(err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? refuse('The workbook is too large to read; save the sheet as “CSV UTF-8” and upload that.') : err),
  );
  worker.on('exit', (code) => fail(new Error(`the XLSX reader thread exited with code ${code}`)));
  signal?.addEventListener('abort', () => fail(signal.reason), { once: true });
  return async () => {
    for (;;) {
      if (queue.length > 0) return queue.shift()!;
      if (failure !== null) throw failure;
      await new Promise<void>((resolve) => (wake = resolve));
      wake = null;
    }
  };
}

export async function readCampaignXlsx(
  source: AsyncIterable<Uint8Array | string>,
  limits: CampaignFileLimits,
  onRow: (row: CampaignRow) => void | Promise<void>,
  onHeaders?: (headers: string[], toColumn: number) => void,
  signal?: AbortSignal,
): Promise<CampaignFileSummary> {
  const file = await gather(source, limits.maxBytes);
  if (file.byteLength === 0) throw refuse('The file is empty.');
  const release = await xlsxReads.acquire(signal);
  const worker = new Worker(new URL('./xlsx-worker.mjs', import.meta.url), {
    workerData: { file, maxRows: limits.maxRows, maxSheetBytes: XLSX_MAX_SHEET_BYTES, maxUnpackedBytes: XLSX_MAX_UNPACKED_BYTES, batchRows: BATCH_ROWS },
    transferList: [file],
    resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
  });
  try {
    const next = inbox(worker, signal);
    const first = await next();
    if (first.type === 'refused') throw refuse(first.message);
    if (first.type !== 'headers') throw new Error(`the XLSX reader sent ${first.type} first`);
    const headers = first.headers;
    const { index: toColumn, how: toColumnHow } = recipientColumnOf(headers, limits.recipientColumn);
    onHeaders?.(headers, toColumn);
    let rows = 0;
    for (;;) {
      worker.postMessage('more');
      const m = await next();
      if (m.type === 'refused') throw refuse(m.message);
      if (m.type !== 'rows') throw new Error(`the XLSX reader sent ${m.type} for rows`);
      for (const row of m.rows) {
        rows++;
        await onRow(row);
      }
      if (m.last) break;
    }
    return { headers, toColumn, toColumnHow, rows, separator: ',', encoding: 'utf-8', format: 'xlsx' };
  } finally {
    release();
    await worker.terminate();
  }
}
