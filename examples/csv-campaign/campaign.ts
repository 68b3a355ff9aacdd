/**
 * Sends a campaign from a CSV or XLSX file (`to,message`, or a phone column and others with a
 * template) through `POST /v1/sms/bulk`, in chunks, with a progress bar on stderr and a JSON
 * summary on stdout.
 *
 *   PIGEON_URL=http://127.0.0.1:3000 PIGEON_KEY=pk_live_... \
 *     node --import tsx examples/csv-campaign/campaign.ts recipients.csv --from Acme [--template T]
 *       [--country GB] [--column "Mobile"] [--every-row] [--opt-out-line] [--callback-url URL] [--chunk-size 1000]
 *
 * Each chunk's Idempotency-Key is derived from the file's content and the chunk's position, so
 * running the same file again within 24 hours (say, after a crash half-way) sends nothing twice:
 * chunks already sent are answered from Pigeon's idempotency store.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Pigeon, PigeonApiError } from '../../packages/client/src/index.ts';
import { readCampaign, type Row } from './csv.ts';

export interface CampaignOptions {
  from: string;
  callbackUrl?: string;
  chunkSize?: number;
  /** Where the progress bar goes; default stderr. */
  progress?: { write(text: string): unknown; isTTY?: boolean };
}

export interface CampaignSummary {
  total: number;
  queued: number;
  rejected: { line: number; to: string; code: string; message: string }[];
  credits_used: number;
  credits_remaining: number | null;
  batch_ids: string[];
}

function sha256Hex(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** `[#########...........]  45% 450/1000`, redrawn in place on a terminal, one line per chunk otherwise. */
export function progressBar(done: number, total: number, width = 30): string {
  const ratio = total === 0 ? 1 : done / total;
  const filled = Math.round(ratio * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}% ${done}/${total}`;
}

/** Sends every row, chunk by chunk; invalid rows are reported, not fatal. */
export async function runCampaign(pigeon: Pigeon, rows: Row[], options: CampaignOptions, fileHash: string): Promise<CampaignSummary> {
  const chunkSize = options.chunkSize ?? 1000;
  const out = options.progress ?? process.stderr;
  const summary: CampaignSummary = { total: rows.length, queued: 0, rejected: [], credits_used: 0, credits_remaining: null, batch_ids: [] };
  const draw = (done: number) => out.write(out.isTTY ? `\r${progressBar(done, rows.length)}` : `${progressBar(done, rows.length)}\n`);
  draw(0);
  for (let start = 0; start < rows.length; start += chunkSize) {
    const chunk = rows.slice(start, start + chunkSize);
    const result = await pigeon.sms.bulk(
      { from: options.from, messages: chunk.map((r) => ({ to: r.to, message: r.message })), ...(options.callbackUrl ? { callback_url: options.callbackUrl } : {}) },
      { idempotencyKey: `csv-${fileHash.slice(0, 32)}-${start}-${chunk.length}` },
    );
    summary.queued += result.queued;
    summary.credits_used += result.credits_used;
    summary.credits_remaining = result.credits_remaining;
    summary.batch_ids.push(result.batch_id);
    for (const e of result.errors) {
      const row = chunk[e.index] as Row;
      summary.rejected.push({ line: row.line, to: e.to, code: e.code, message: e.message });
    }
    draw(Math.min(start + chunkSize, rows.length));
  }
  if (out.isTTY) out.write('\n');
  return summary;
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      from: { type: 'string' },
      template: { type: 'string' },
      country: { type: 'string' },
      column: { type: 'string' },
      'every-row': { type: 'boolean', default: false },
      'opt-out-line': { type: 'boolean', default: false },
      'callback-url': { type: 'string' },
      'chunk-size': { type: 'string', default: '1000' },
    },
  });
  const file = positionals[0];
  const apiKey = process.env.PIGEON_KEY;
  if (!file || !values.from || !apiKey) {
    console.error(
      'usage: PIGEON_KEY=... [PIGEON_URL=...] campaign.ts <file.csv|file.xlsx> --from <SenderID> [--template "Hi {{first_name}}"] [--country GB] [--column NAME] [--every-row] [--opt-out-line] [--callback-url URL] [--chunk-size N]',
    );
    process.exit(2);
  }
  const bytes = await readFile(file);
  const { rows, duplicates } = await readCampaign(bytes, {
    template: values.template,
    country: values.country,
    column: values.column,
    everyRow: values['every-row'],
    optOutLine: values['opt-out-line'],
    format: /\.xlsx$/i.test(file) ? 'xlsx' : 'csv',
  });
  const options = JSON.stringify([values.template, values.country, values.column, values['every-row'], values['opt-out-line']]);
  const pigeon = new Pigeon({ apiKey, baseUrl: process.env.PIGEON_URL ?? 'http://127.0.0.1:3000' });
  try {
    // The same file read another way is another campaign: the options are part of the key.
    const hash = sha256Hex(options === JSON.stringify([undefined, undefined, undefined, false, false]) ? bytes : Buffer.concat([Buffer.from(`${options}\u0000`), bytes]));
    const summary = await runCampaign(pigeon, rows, { from: values.from, callbackUrl: values['callback-url'], chunkSize: Number(values['chunk-size']) }, hash);
    console.log(JSON.stringify({ ...summary, duplicates_skipped: duplicates.map((d) => ({ line: d.line, to: d.to })) }, null, 2));
  } catch (err) {
    if (err instanceof PigeonApiError) {
      console.error(`\nPigeon refused the campaign: ${err.status} ${err.code}: ${err.message}\nSee ${err.docs_url}`);
      process.exit(1);
    }
    throw err;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
