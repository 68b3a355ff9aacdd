/**
 * The peer race: Pigeon and Kannel take the same load (autocannon, 64 connections, one process on
 * the same machine), interleaved round by round (Pigeon, Kannel, Pigeon, ...), so that each ratio
 * compares two runs a few seconds apart instead of minutes apart on a machine whose speed drifts.
 * Pigeon runs twice per round: `serve --no-workers` (acceptance only) and the default `serve`
 * (its workers dispatching over SMPP while it accepts, as Kannel's bearerbox does). Each
 * contender starts afresh on its own local SMSC and stops after its turn, so none inherits
 * another's queue; each gets the same unmeasured warm-up load first. Prints every run with the machine's cores and load average, then the median
 * ratio of each pair with its spread (lowest–highest over the rounds), for sendsms/send requests
 * and for SMPP submits during the load.
 *
 * The goals, printed as met or not: the default `serve` at 1.5 × Kannel or more in both requests
 * and SMPP submits on SQLite (1.0 × on PostgreSQL), with its dispatch backlog flat meanwhile (it
 * submits what it accepts: the backlog grows by under 2 % of the accepted rate).
 *
 *   node --import tsx bench/race.bench.ts [seconds per run=10] [rounds=3] [sqlite|postgres]
 */
import { figure, load, median, report, type Figure } from './lib.ts';
import { ensureKannel, machine, startKannel, startPigeonContender, type Contender } from './peers.ts';

const SECONDS = Number(process.argv[2] ?? 10);
const ROUNDS = Math.max(1, Number(process.argv[3] ?? 3));
const STORE = process.argv[4] ?? 'sqlite';
const GOAL = STORE === 'postgres' ? 1.0 : 1.5;
/** Unmeasured load first: a Node process compiles its hot paths in its first seconds; Kannel gets the same. */
const WARMUP = Math.max(1, Math.min(3, Math.round(SECONDS / 3)));

if (!ensureKannel()) {
  console.error('# race: could not install the kannel package; skipped');
  report([]);
  process.exit(0);
}

interface Run {
  requests: number;
  p99: number;
  submits: number;
  /** How fast the dispatch backlog grew during the load, as a share of the accepted rate (Pigeon only). */
  growth: number | null;
}

async function run(name: string, start: () => Promise<Contender>): Promise<Run> {
  const c = await start();
  try {
    const opts = { ...(c.method ? { method: c.method } : {}), ...(c.headers ? { headers: c.headers } : {}), ...(c.body ? { body: c.body } : {}) };
    await load(c.url, { connections: 64, seconds: WARMUP, ...opts });
    const before = await c.smsc.acknowledged();
    const backlogBefore = await c.backlog();
    const t = performance.now();
    const r = await load(c.url, { connections: 64, seconds: SECONDS, ...opts });
    const seconds = (performance.now() - t) / 1000;
    const submits = ((await c.smsc.acknowledged()) - before) / seconds;
    const backlogAfter = await c.backlog();
    const growth = backlogBefore === null || backlogAfter === null ? null : (backlogAfter - backlogBefore) / seconds / Math.max(1, r.requestsPerSecond);
    const backlog = growth === null ? '' : `, backlog ${backlogBefore} → ${backlogAfter} (${(growth * 100).toFixed(0)} % of the accepted rate)`;
    console.error(`#   ${name}: ${Math.round(r.requestsPerSecond)} req/s, p99 ${r.p99} ms, ${Math.round(submits)} SMPP submits/s${backlog} (${machine()})`);
    return { requests: r.requestsPerSecond, p99: r.p99, submits, growth };
  } finally {
    await c.stop();
  }
}

const runs: { acceptance: Run; serve: Run; kannel: Run }[] = [];
for (let round = 1; round <= ROUNDS; round++) {
  console.error(`# race round ${round} of ${ROUNDS}`);
  const acceptance = await run('pigeon serve --no-workers', () => startPigeonContender(false, { store: STORE }));
  const kannel = await run('kannel', startKannel);
  const serve = await run('pigeon serve (workers, SMPP)', () => startPigeonContender(true, { store: STORE }));
  runs.push({ acceptance, serve, kannel });
}

function ratio(name: string, values: number[], target?: { min: number }): Figure[] {
  return [
    figure(`${name}, median of ${values.length} rounds`, median(values), '×', target),
    figure(`${name}, lowest`, Math.min(...values), '×'),
    figure(`${name}, highest`, Math.max(...values), '×'),
  ];
}

const at = machine();
report([
  figure(`kannel sendsms requests/s, median (${at})`, median(runs.map((r) => r.kannel.requests)), 'req/s'),
  figure('kannel sendsms p99, median', median(runs.map((r) => r.kannel.p99)), 'ms'),
  figure('kannel SMPP submits/s during the load, median', median(runs.map((r) => r.kannel.submits)), 'msg/s'),
  figure('pigeon serve --no-workers requests/s, median', median(runs.map((r) => r.acceptance.requests)), 'req/s'),
  figure('pigeon serve requests/s (workers on, SMPP), median', median(runs.map((r) => r.serve.requests)), 'req/s'),
  figure('pigeon serve p99 (workers on), median', median(runs.map((r) => r.serve.p99)), 'ms'),
  figure('pigeon serve SMPP submits/s during the load, median', median(runs.map((r) => r.serve.submits)), 'msg/s'),
  ...ratio('send: Pigeon --no-workers / Kannel', runs.map((r) => r.acceptance.requests / r.kannel.requests)),
  ...ratio(`send: Pigeon serve (workers on) / Kannel, ${STORE}`, runs.map((r) => r.serve.requests / r.kannel.requests), { min: GOAL }),
  ...ratio(`SMPP submits: Pigeon serve / Kannel, ${STORE}`, runs.map((r) => r.serve.submits / Math.max(1, r.kannel.submits)), { min: GOAL }),
  figure('Pigeon serve dispatch backlog growth during the load, share of accepted, highest', Math.max(...runs.map((r) => r.serve.growth ?? 0)), 'ratio', { max: 0.02 }),
]);
