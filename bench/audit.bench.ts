/**
 * Whether the audit log slows sends (DECISIONS.md §15: it must not): the send rate of this tree
 * against the tree before the audit log (`AUDIT_BENCH_BASE`, default the commit before
 * migration 030), each a `pigeon serve --no-workers` on a SQLite file of its own, made and
 * filled by its own tree's command line. Sends are measured in turn, ABBA: round 1 before then
 * after, round 2 after then before, and so on, so that the two figures of a round are seconds
 * apart on a machine whose speed drifts.
 *
 * Prints the median requests/s of each with its spread, the median ratio after/before with its
 * spread, and the server CPU time per send of each (read from /proc).
 *
 *   node --import tsx bench/audit.bench.ts [seconds per run=10] [rounds=4]
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../test/helpers/processes.ts';
import { cpuTicks, figure, load, median, report } from './lib.ts';
import { machine } from './peers.ts';

const SECONDS = Number(process.argv[2] ?? 10);
const ROUNDS = Math.max(1, Number(process.argv[3] ?? 4));
const WARMUP = Math.max(1, Math.min(3, Math.round(SECONDS / 3)));
const ROOT = resolve(import.meta.dirname, '..');
const BASE = process.env.AUDIT_BENCH_BASE ?? execFileSync('git', ['log', '-1', '--format=%H', '--', 'src/store/migrations/030-audit.ts'], { cwd: ROOT, encoding: 'utf8' }).trim() + '^';

const dir = mkdtempSync(join(tmpdir(), 'pigeon-bench-audit-'));

/** The tree before the audit log, unpacked beside this one and sharing its node_modules. */
function unpackBase(): string {
  const tree = join(dir, 'before');
  execFileSync('mkdir', ['-p', tree]);
  execFileSync('sh', ['-c', `git archive ${BASE} | tar -x -C ${tree}`], { cwd: ROOT });
  symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'));
  return tree;
}

function cli(tree: string, env: Record<string, string>, ...args: string[]): Record<string, any> {
  const out = execFileSync(join(tree, 'bin/pigeon'), [...args, '--json'], { cwd: tree, env: { ...process.env, ...env }, encoding: 'utf8' });
  return JSON.parse(out) as Record<string, any>;
}

interface Server {
  key: string;
  port: number;
  child: ChildProcess;
}

/** A database for `tree` with a customer ready to send, and the server on it. */
async function serve(tree: string, name: string): Promise<Server> {
  const env = { DATABASE_URL: `sqlite:${join(dir, `${name}.db`)}`, LOG_LEVEL: 'warn' };
  cli(tree, env, 'migrate');
  const account = cli(tree, env, 'account', 'create', '--name', name, '--email', `${name}@example.com`, '--credits', '100000000');
  const key = cli(tree, env, 'key', 'create', account.id, '--label', 'bench').key as string;
  const port = await freePort();
  const child = spawn(join(tree, 'bin/pigeon'), ['serve', '--no-workers'], {
    cwd: tree,
    env: { ...process.env, ...env, LOG_LEVEL: 'info', PORT: String(port), SMPP_SERVER_PORT: '0', RATE_LIMIT_MAX: '100000000', DISPATCH_BACKLOG_LIMIT: '100000000' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error(`${name} did not start`)), 60_000);
    child.stdout!.on('data', (c: Buffer) => {
      if (out.length < 100_000) out += c.toString();
      if (out.includes('"msg":"pigeon started"')) {
        clearTimeout(timer);
        ok();
      }
    });
  });
  const registered = await fetch(`http://127.0.0.1:${port}/v1/sms/sender-ids`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Bench' }) });
  const sid = ((await registered.json()) as { data: { id: string } }).data.id;
  cli(tree, env, 'sender-id', 'approve', sid);
  return { key, port, child };
}

try {
  const before = await serve(unpackBase(), 'before');
  const after = await serve(ROOT, 'after');
  const servers = { before, after };
  const runs: Record<'before' | 'after', { rate: number; cpuUs: number }[]> = { before: [], after: [] };
  try {
    const send = (s: Server, seconds: number) =>
      load(`http://127.0.0.1:${s.port}/v1/sms/send`, {
        connections: 64,
        seconds,
        method: 'POST',
        headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: '+14155552671', from: 'Bench', message: 'Your code is 123456' }),
      });
    await send(before, WARMUP);
    await send(after, WARMUP);
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 === 1 ? (['before', 'after'] as const) : (['after', 'before'] as const);
      for (const which of order) {
        const s = servers[which];
        const ticks = cpuTicks(s.child.pid!);
        const r = await send(s, SECONDS);
        const cpuUs = ((cpuTicks(s.child.pid!) - ticks) * 10_000) / Math.max(1, r.total);
        if (r.non2xx > 0) console.error(`#   ${which}: ${r.non2xx} answers were not 2xx`);
        runs[which].push({ rate: r.requestsPerSecond, cpuUs });
        console.error(`#   round ${round} ${which}: ${Math.round(r.requestsPerSecond)} req/s, ${Math.round(cpuUs)} µs server CPU per send (${machine()})`);
      }
    }
  } finally {
    before.child.kill('SIGTERM');
    after.child.kill('SIGTERM');
  }
  const rates = (w: 'before' | 'after') => runs[w].map((r) => r.rate);
  const ratios = runs.after.map((a, i) => (a.rate / runs.before[i]!.rate) * 100);
  report([
    figure('send before the audit log, median requests/s', median(rates('before')), 'req/s'),
    figure('send before the audit log, lowest requests/s', Math.min(...rates('before')), 'req/s'),
    figure('send before the audit log, highest requests/s', Math.max(...rates('before')), 'req/s'),
    figure('send with the audit log, median requests/s', median(rates('after')), 'req/s'),
    figure('send with the audit log, lowest requests/s', Math.min(...rates('after')), 'req/s'),
    figure('send with the audit log, highest requests/s', Math.max(...rates('after')), 'req/s'),
    figure('send with / before the audit log, median of rounds', median(ratios), '%'),
    figure('send with / before the audit log, lowest round', Math.min(...ratios), '%'),
    figure('send with / before the audit log, highest round', Math.max(...ratios), '%'),
    figure('send before the audit log, median server CPU per send', median(runs.before.map((r) => r.cpuUs)), 'µs'),
    figure('send with the audit log, median server CPU per send', median(runs.after.map((r) => r.cpuUs)), 'µs'),
  ]);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
