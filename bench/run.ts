/**
 * `npm run bench`: runs each benchmark script in its own process, one after the other, and prints
 * every figure side by side with its target. Figures are information, never a test: this exits 0
 * whatever the numbers, unless a benchmark itself crashes.
 *
 *   npm run bench                 the full suite (about 15 minutes)
 *   npm run bench -- --quick      shorter runs, for a smoke check
 *   npm run bench -- --only=send  one benchmark by name (or several: --only=send,race)
 *
 * Every figure is printed with the machine's cores and load average when its suite ended: the
 * machine may be shared, and a figure means little without them.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { figure, type Figure } from './lib.ts';
import { machine } from './peers.ts';

const quick = process.argv.includes('--quick');
const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length).split(',');

const suites: { name: string; args: string[]; env?: Record<string, string> }[] = [
  { name: 'send', args: ['bench/http.bench.ts', quick ? '5' : '20', 'sqlite'] },
  // The same with every commit synced (SQLITE_SYNCHRONOUS=full): what surviving a power cut costs.
  { name: 'send-sync-full', args: ['bench/http.bench.ts', quick ? '5' : '20', 'sqlite'], env: { SQLITE_SYNCHRONOUS: 'full' } },
  { name: 'send-pg', args: ['bench/http.bench.ts', quick ? '5' : '20', 'postgres'] },
  { name: 'bulk', args: ['bench/bulk.bench.ts', 'sqlite'] },
  { name: 'bulk-pg', args: ['bench/bulk.bench.ts', 'postgres'] },
  // Offered a tenth above the 5,000 msg/s target: delivered at that rate with the dispatch backlog
  // flat means the pipeline sustains it (the load generator itself runs a little under what it
  // offers); offered far more, the delivered rate would be a ceiling with a growing backlog.
  { name: 'throughput', args: ['bench/throughput.bench.ts', quick ? '15' : '60', '5500', 'sqlite'] },
  { name: 'throughput-pg', args: ['bench/throughput.bench.ts', quick ? '15' : '60', '5500', 'postgres'] },
  { name: 'reports', args: ['bench/reports.bench.ts', quick ? '5' : '10', quick ? '100000' : '1000000', 'sqlite'] },
  { name: 'scheduling', args: ['bench/scheduling.bench.ts', quick ? '20000' : '100000', 'sqlite'] },
  { name: 'scheduling-pg', args: ['bench/scheduling.bench.ts', quick ? '20000' : '100000', 'postgres'] },
  { name: 'webhooks', args: ['bench/webhooks.bench.ts'] },
  { name: 'smpp', args: ['bench/smpp.bench.ts'] },
  { name: 'smpp-inbound', args: ['bench/smpp-inbound.bench.ts', quick ? '5000' : '20000'] },
  // Pigeon as an SMSC: submit_sm over 4 binds against HTTP sends, interleaved; queued receipts to a receiver.
  { name: 'smpp-server', args: ['bench/smpp-server.bench.ts', quick ? '4' : '10', '3', 'sqlite', quick ? '2000' : '5000'] },
  { name: 'smpp-server-pg', args: ['bench/smpp-server.bench.ts', quick ? '4' : '10', '3', 'postgres', quick ? '2000' : '5000'] },
  // Pigeon (--no-workers, and serve with workers on SMPP) and Kannel, interleaved round by round.
  { name: 'race', args: ['bench/race.bench.ts', quick ? '4' : '10', '3'] },
  { name: 'race-pg', args: ['bench/race.bench.ts', quick ? '4' : '10', '3', 'postgres'] },
  // The default serve at steady offered rates (open loop): send latency at 1,000/s and at 50 % and
  // 80 % of saturation, beside a bare Node server's under the same generator (issue 47 goal 2);
  // CPU per message end to end against Kannel; where Pigeon's time goes.
  { name: 'steady', args: ['bench/steady.bench.ts', quick ? '4' : '10', 'sqlite', quick ? '1' : '2'] },
  { name: 'steady-pg', args: ['bench/steady.bench.ts', quick ? '4' : '10', 'postgres', quick ? '1' : '2'] },
  { name: 'scale-out', args: ['bench/scale-out.bench.ts', quick ? '4' : '10', '1,2,4'] },
  // The send rate with a 100,000-prefix rate card against the flat default, interleaved round by round.
  { name: 'pricing', args: ['bench/pricing.bench.ts', quick ? '4' : '10', quick ? '3' : '5'] },
  // Bytes per message, send p99 during a purge against quiet, the file under steady traffic with retention, the recipient index's cost.
  { name: 'retention', args: ['bench/retention.bench.ts', quick ? '50000' : '1000000', quick ? '3' : '6'] },
  // A 100,000-row CSV and XLSX read as the composer reads them: time, peak RSS, event loop delay.
  { name: 'campaign-files', args: ['bench/campaign-files.bench.ts', quick ? '20000' : '100000'] },
  // Verify: creates (fraud guard on and off, ABBA) and checks per second next to plain sends (issue 44's goals).
  { name: 'verify', args: ['bench/verify.bench.ts', quick ? '4' : '10', quick ? '2' : '3', 'sqlite'] },
  { name: 'verify-pg', args: ['bench/verify.bench.ts', quick ? '4' : '10', quick ? '2' : '3', 'postgres'] },
  // The send rate with the audit log against the tree before it, ABBA (DECISIONS.md §15: sends are not slowed).
  // The tracked-link redirect offered 1,000 clicks/s, each counted (DECISIONS.md §16: p99 under 10 ms),
  // interleaved with a bare Node server and a static route under the same generator, two rounds.
  { name: 'links', args: ['bench/links.bench.ts', quick ? '5' : '10', 'sqlite'] },
  { name: 'links-pg', args: ['bench/links.bench.ts', quick ? '5' : '10', 'postgres'] },
  { name: 'audit', args: ['bench/audit.bench.ts', quick ? '4' : '10', quick ? '2' : '4'] },
];

function runOne(args: string[], env: Record<string, string> = {}): Promise<Figure[]> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
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
const rows: (Figure & { machine: string })[] = [];
// The commit measured, for the figures written to docs/performance.md ("+ changes" when the tree differs from it).
const git = (...args: string[]) => spawnSync('git', args, { encoding: 'utf8' });
const head = git('rev-parse', '--short', 'HEAD');
const commit = head.status === 0 ? `commit ${head.stdout.trim()}${git('status', '--porcelain', '--untracked-files=no').stdout.trim() ? ' + changes' : ''}` : 'not a git checkout';
console.log(`# Pigeon benchmarks on ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${commit}`);
for (const suite of suites) {
  if (only && !only.includes(suite.name)) continue;
  if (!existsSync(suite.args[0]!)) continue;
  console.log(`# ${suite.name}… (${machine()})`);
  const figures = await runOne(suite.args, suite.env);
  const at = machine();
  rows.push(...figures.map((f) => ({ ...f, machine: at })));
  for (const f of figures) console.log(`#   ${f.name}: ${f.value} ${f.unit} (${at})`);
}
// Ratios to the peer come from the race itself, measured round by round (bench/race.bench.ts).
// PostgreSQL's send rate is set against SQLite's from the same run: at least 60 % of it.
const rateOf = (store: string) => rows.find((r) => r.name === `send (${store}) requests/s`);
const [sqliteSend, postgresSend] = [rateOf('sqlite'), rateOf('postgres')];
if (sqliteSend && postgresSend) {
  rows.push({ ...figure('send PostgreSQL / SQLite, same run', (postgresSend.value / sqliteSend.value) * 100, '%', { min: 60 }), machine: postgresSend.machine });
}

const width = Math.max(...rows.map((r) => r.name.length), 10);
console.log('');
console.log(`${'figure'.padEnd(width)}  ${'value'.padStart(10)}  unit      target      met  machine`);
for (const r of rows) {
  console.log(
    `${r.name.padEnd(width)}  ${String(r.value).padStart(10)}  ${r.unit.padEnd(8)}  ${(r.target ?? '').padEnd(10)}  ${(r.met === undefined ? '' : r.met ? 'yes' : 'NO').padEnd(3)}  ${r.machine}`,
  );
}
