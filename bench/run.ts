/**
 * `npm run bench`: runs each benchmark script in its own process, one after the other, and prints
 * every figure side by side with its target. Figures are information, never a test: this exits 0
 * whatever the numbers, unless a benchmark itself crashes.
 *
 *   npm run bench                 the full suite (about 5 minutes)
 *   npm run bench -- --quick      shorter runs, for a smoke check
 *   npm run bench -- --only=send  one benchmark by name (or several: --only=send,kannel)
 */
import { spawn } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { figure, type Figure } from './lib.ts';

const quick = process.argv.includes('--quick');
const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length).split(',');

const suites: { name: string; args: string[] }[] = [
  { name: 'send', args: ['bench/http.bench.ts', quick ? '5' : '20', 'sqlite'] },
  { name: 'send-pg', args: ['bench/http.bench.ts', quick ? '5' : '20', 'postgres'] },
  { name: 'bulk', args: ['bench/bulk.bench.ts', 'sqlite'] },
  { name: 'bulk-pg', args: ['bench/bulk.bench.ts', 'postgres'] },
  { name: 'throughput', args: ['bench/throughput.bench.ts', quick ? '15' : '60', '6000', 'sqlite'] },
  { name: 'throughput-pg', args: ['bench/throughput.bench.ts', quick ? '15' : '60', '6000', 'postgres'] },
  { name: 'reports', args: ['bench/reports.bench.ts', quick ? '5' : '10', quick ? '100000' : '1000000', 'sqlite'] },
  { name: 'webhooks', args: ['bench/webhooks.bench.ts'] },
  { name: 'smpp', args: ['bench/smpp.bench.ts'] },
  { name: 'smpp-inbound', args: ['bench/smpp-inbound.bench.ts', quick ? '5000' : '20000'] },
  { name: 'kannel', args: ['bench/kannel.bench.ts', quick ? '5' : '20'] },
];

function runOne(args: string[]): Promise<Figure[]> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => {
      const last = out.trim().split('\n').at(-1) ?? '';
      try {
        resolve((JSON.parse(last) as { figures: Figure[] }).figures);
      } catch {
        console.error(`# ${args[0]} exited with ${code} and printed no figures`);
        resolve([]);
      }
    });
  });
}

const { existsSync } = await import('node:fs');
const rows: Figure[] = [];
console.log(`# Pigeon benchmarks on ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`);
for (const suite of suites) {
  if (only && !only.includes(suite.name)) continue;
  if (!existsSync(suite.args[0]!)) continue;
  console.log(`# ${suite.name}…`);
  const figures = await runOne(suite.args);
  rows.push(...figures);
  for (const f of figures) console.log(`#   ${f.name}: ${f.value} ${f.unit}`);
}
// Ratios to the peer, measured in this same run.
const value = (name: string) => rows.find((r) => r.name === name)?.value;
const kannelAccept = value('kannel sendsms requests/s');
const pigeonAccept = value('send (sqlite) requests/s');
if (kannelAccept && pigeonAccept) rows.push(figure('send: Pigeon / Kannel acceptance', pigeonAccept / kannelAccept, '×', { min: 1.5 }));
const kannelSubmit = value('kannel SMPP submits/s during the load');
const pigeonSubmit = rows.find((r) => r.name.startsWith('SMPP') && r.unit === 'msg/s')?.value;
if (kannelSubmit && pigeonSubmit) rows.push(figure('SMPP: Pigeon / Kannel submit rate', pigeonSubmit / kannelSubmit, '×', { min: 1.5 }));

const width = Math.max(...rows.map((r) => r.name.length), 10);
console.log('');
console.log(`${'figure'.padEnd(width)}  ${'value'.padStart(10)}  unit      target      met`);
for (const r of rows) {
  console.log(`${r.name.padEnd(width)}  ${String(r.value).padStart(10)}  ${r.unit.padEnd(8)}  ${(r.target ?? '').padEnd(10)}  ${r.met === undefined ? '' : r.met ? 'yes' : 'NO'}`);
}
