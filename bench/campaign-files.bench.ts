/**
 * Reading a campaign file of 100,000 rows as the composer does (docs/campaign-files.md): the file
 * streamed in 64 KiB chunks, as an upload arrives, through the CSV or the XLSX reader. Each read
 * runs in a fresh process, so that its peak RSS is its own; meanwhile the event loop's delay is
 * sampled (10 ms resolution) to show whether the read held up the process's other requests.
 *
 *   node --import tsx bench/campaign-files.bench.ts [rows]        both formats, 100,000 rows by default
 *   node --import tsx bench/campaign-files.bench.ts --read <file>  one read (what the above spawns)
 */
import { spawnSync } from 'node:child_process';
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { campaignSheetRows, xlsxWorkbook } from '../test/helpers/xlsx.ts';
import { figure, report, type Figure } from './lib.ts';

const LIMITS = { maxRows: 100_000, maxBytes: 20 * 1024 * 1024 };

async function readOne(path: string): Promise<void> {
  const { readCampaignCsv } = await import('../src/services/campaigns/campaign-file.ts');
  const { readCampaignXlsx } = await import('../src/services/campaigns/campaign-xlsx.ts');
  const read = path.endsWith('.xlsx') ? readCampaignXlsx : readCampaignCsv;
  global.gc?.();
  const before = process.memoryUsage().rss;
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const started = performance.now();
  let rows = 0;
  await read(createReadStream(path, { highWaterMark: 64 * 1024 }), LIMITS, () => {
    rows++;
  });
  const ms = performance.now() - started;
  // A delay is recorded when the sampling timer finally runs: let it run once after the read, or
  // a read that held the loop to its very end would not be counted.
  await new Promise((resolve) => setTimeout(resolve, 25));
  delay.disable();
  // maxRSS is in KiB and covers the whole process: the reader's peak, plus what the process held before.
  const peak = process.resourceUsage().maxRSS * 1024;
  process.stdout.write(`${JSON.stringify({ rows, ms, peakMiB: peak / 2 ** 20, beforeMiB: before / 2 ** 20, maxDelayMs: delay.max / 1e6, p99DelayMs: delay.percentile(99) / 1e6 })}\n`);
}

/** A sheet as wide as the XLSX bound allows for `count` rows: `to`, then short strings and numbers in turn (14 columns: 47 MiB of sheet XML). */
function* wideSheetRows(count: number, columns: number): Generator<[number, (string | number)[]]> {
  yield [1, ['to', ...Array.from({ length: columns - 1 }, (_, c) => `field_${c}`)]];
  for (let i = 0; i < count; i++) yield [i + 2, [`+336${String(10_000_000 + i)}`, ...Array.from({ length: columns - 1 }, (_, c) => (c % 2 ? (i * 7 + c) % 100_000 : `v${c}_${i % 3000}`))]];
}

async function main(): Promise<void> {
  const count = Number(process.argv[2] ?? 100_000);
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-campaign-files-'));
  try {
    const xlsx = join(dir, 'campaign.xlsx');
    const wide = join(dir, 'wide.xlsx');
    const csv = join(dir, 'campaign.csv');
    writeFileSync(xlsx, xlsxWorkbook(campaignSheetRows(count), { sharedStrings: true }));
    writeFileSync(wide, xlsxWorkbook(wideSheetRows(count, 14), { sharedStrings: true }));
    writeFileSync(csv, `${[...campaignSheetRows(count)].map(([, cells]) => cells.join(',')).join('\n')}\n`);
    const figures: Figure[] = [];
    for (const [format, path] of [['CSV', csv], ['XLSX', xlsx], ['XLSX of 14 columns', wide]] as const) {
      const child = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', import.meta.filename, '--read', path], { encoding: 'utf8' });
      if (child.status !== 0) throw new Error(`reading ${format} failed: ${child.stderr}`);
      const r = JSON.parse(child.stdout.trim().split('\n').at(-1)!) as { rows: number; ms: number; peakMiB: number; beforeMiB: number; maxDelayMs: number; p99DelayMs: number };
      if (r.rows !== count) throw new Error(`${format}: ${r.rows} rows read of ${count}`);
      console.error(`# ${format}, ${count.toLocaleString('en')} rows: ${Math.round(r.ms)} ms, peak RSS ${Math.round(r.peakMiB)} MiB (${Math.round(r.beforeMiB)} MiB before), event loop delay max ${r.maxDelayMs.toFixed(1)} ms, p99 ${r.p99DelayMs.toFixed(1)} ms`);
      figures.push(
        figure(`campaign ${format} ${count} rows read`, r.ms, 'ms'),
        figure(`campaign ${format} ${count} rows peak RSS`, r.peakMiB, 'MiB'),
        figure(`campaign ${format} ${count} rows event loop delay max`, r.maxDelayMs, 'ms'),
      );
    }
    report(figures);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--read') await readOne(process.argv[3]!);
else await main();
