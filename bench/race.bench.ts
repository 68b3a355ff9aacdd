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
 * The goals, printed as met or not: the default `serve` submitting over SMPP during the flood at
 * 2 × Kannel or more on SQLite (1.5 × on PostgreSQL), while still taking at least as many
 * requests as Kannel, and using at least 1.6 of the 2 cores (every process it starts counted).
 * The backlog may grow during a flood: how fast it drains afterwards is printed beside it.
 *
 *   node --import tsx bench/race.bench.ts [seconds per run=10] [rounds=3] [sqlite|postgres]
 */
import { cpuTicks, figure, load, median, report, type Figure } from './lib.ts';
import { ensureKannel, machine, startKannel, startPigeonContender, type Contender } from './peers.ts';

const SECONDS = Number(process.argv[2] ?? 10);
const ROUNDS = Math.max(1, Number(process.argv[3] ?? 3));
const STORE = process.argv[4] ?? 'sqlite';
const SUBMIT_GOAL = STORE === 'postgres' ? 1.5 : 2.0;
const REQUEST_GOAL = 1.0;
const CORES_GOAL = 1.6;
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
  /** Cores the contender's processes used during the load (PostgreSQL's apart). */
  cores: number;
  /** After the load, how fast the backlog drained (Pigeon only): messages per second. */
  drain: number | null;
}

async function run(name: string, start: () => Promise<Contender>): Promise<Run> {
  const c = await start();
  try {
    const opts = { ...(c.method ? { method: c.method } : {}), ...(c.headers ? { headers: c.headers } : {}), ...(c.body ? { body: c.body } : {}) };
    await load(c.url, { connections: 64, seconds: WARMUP, ...opts });
    const before = await c.smsc.acknowledged();
    const backlogBefore = await c.backlog();
    const ticks = () => c.pids.reduce((n, pid) => n + cpuTicks(pid), 0);
    const ticksBefore = ticks();
    const t = performance.now();
    const r = await load(c.url, { connections: 64, seconds: SECONDS, ...opts });
    const seconds = (performance.now() - t) / 1000;
    const cores = (ticks() - ticksBefore) / 100 / seconds;
    const submits = ((await c.smsc.acknowledged()) - before) / seconds;
    const backlogAfter = await c.backlog();
    // The backlog's drain once the flood stops: submits over at most 5 s, while there is a backlog.
    let drain: number | null = null;
    if (backlogAfter !== null && backlogAfter > 0) {
      const from = await c.smsc.acknowledged();
      const t0 = performance.now();
      while (performance.now() - t0 < 5000 && ((await c.backlog()) ?? 0) > 0) await new Promise((res) => setTimeout(res, 100));
      drain = ((await c.smsc.acknowledged()) - from) / ((performance.now() - t0) / 1000);
    }
    const growth = backlogBefore === null || backlogAfter === null ? null : (backlogAfter - backlogBefore) / seconds / Math.max(1, r.requestsPerSecond);
    const backlog = growth === null ? '' : `, backlog ${backlogBefore} → ${backlogAfter} (${(growth * 100).toFixed(0)} % of the accepted rate)`;
    const drained = drain === null ? '' : `, drained at ${Math.round(drain)}/s after`;
    console.error(`#   ${name}: ${Math.round(r.requestsPerSecond)} req/s, p99 ${r.p99} ms, ${Math.round(submits)} SMPP submits/s${backlog}${drained}, ${cores.toFixed(2)} cores (${machine()})`);
    return { requests: r.requestsPerSecond, p99: r.p99, submits, growth, cores, drain };
  } finally {
    await c.stop();
  }
}

const runs: { acceptance: Run; serve: Run; kannel: Run }[] = [];
for (let round = 1; round <= ROUNDS; round++) {
  console.error(`# race round ${round} of ${ROUNDS}`);
  const acceptance = await run('pigeon serve --no-workers', () => startPigeonContender(false, { store: STORE }));
  const kannel = await run('kannel', startKannel);
  const serve = await run('pigeon serve (delivery process, SMPP)', () => startPigeonContender(true, { store: STORE }));
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
const goals: [string, number, number][] = [
  [`SMPP submits during the flood ≥ ${SUBMIT_GOAL} × Kannel's (median ratio)`, median(runs.map((r) => r.serve.submits / Math.max(1, r.kannel.submits))), SUBMIT_GOAL],
  [`requests ≥ ${REQUEST_GOAL} × Kannel's (median ratio)`, median(runs.map((r) => r.serve.requests / r.kannel.requests)), REQUEST_GOAL],
  [`cores used ≥ ${CORES_GOAL} (median)`, median(runs.map((r) => r.serve.cores)), CORES_GOAL],
];
for (const [goal, value, min] of goals) console.error(`# goal: ${goal}: ${value.toFixed(2)}, ${value >= min ? 'met' : 'NOT met'} (${at})`);
report([
  figure(`kannel sendsms requests/s, median (${at})`, median(runs.map((r) => r.kannel.requests)), 'req/s'),
  figure('kannel sendsms p99, median', median(runs.map((r) => r.kannel.p99)), 'ms'),
  figure('kannel SMPP submits/s during the load, median', median(runs.map((r) => r.kannel.submits)), 'msg/s'),
  figure('pigeon serve --no-workers requests/s, median', median(runs.map((r) => r.acceptance.requests)), 'req/s'),
  figure('pigeon serve requests/s (workers on, SMPP), median', median(runs.map((r) => r.serve.requests)), 'req/s'),
  figure('pigeon serve p99 (workers on), median', median(runs.map((r) => r.serve.p99)), 'ms'),
  figure('pigeon serve SMPP submits/s during the load, median', median(runs.map((r) => r.serve.submits)), 'msg/s'),
  ...ratio('send: Pigeon --no-workers / Kannel', runs.map((r) => r.acceptance.requests / r.kannel.requests)),
  ...ratio(`send: Pigeon serve (workers on) / Kannel, ${STORE}`, runs.map((r) => r.serve.requests / r.kannel.requests), { min: REQUEST_GOAL }),
  ...ratio(`SMPP submits during the flood: Pigeon serve / Kannel, ${STORE}`, runs.map((r) => r.serve.submits / Math.max(1, r.kannel.submits)), { min: SUBMIT_GOAL }),
  figure('Pigeon serve cores used during the flood (every process it starts), median', median(runs.map((r) => r.serve.cores)), 'cores', { min: CORES_GOAL }),
  figure('Kannel cores used during the flood (bearerbox and smsbox), median', median(runs.map((r) => r.kannel.cores)), 'cores'),
  figure('Pigeon serve dispatch backlog growth during the load, share of accepted, highest', Math.max(...runs.map((r) => r.serve.growth ?? 0)), 'ratio'),
  figure('Pigeon serve backlog drain after the flood, median', median(runs.flatMap((r) => (r.serve.drain === null ? [] : [r.serve.drain]))), 'msg/s'),
]);
