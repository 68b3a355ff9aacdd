/**
 * Verify against plain sends (issue 44's goals): verifications created per second with the fraud
 * guard on (`monitor`: every rule's lookups run, nothing is refused for conversion) and off, and
 * code checks per second, next to `POST /v1/sms/send`, all through one `pigeon serve --no-workers`
 * (acceptance only, as the `send` bench) under 64 connections. The four are interleaved round by
 * round, in an order that turns each round (ABBA for the guard), so that each ratio compares runs
 * seconds apart on a machine whose speed drifts.
 *
 * Every create goes to a number of its own, 9 to a number range (under the fraud guard's velocity
 * and conversion limits: see `numbers`), and so does every plain send (numbers drawn the same way
 * from other area codes); checks are wrong codes by `verification_id`, five to a verification (its
 * checks), over verifications made before the run.
 *
 * Goals: a create costs at most 1.5 × a plain send (send rate / create rate), a check at most a
 * plain send, and the guard adds no measurable cost (creates with the guard on / off, within the
 * spread of the rounds). Each cost is also measured as the CPU time per answered request (Linux,
 * /proc) of the server and, on PostgreSQL, of the database's processes working for it (its
 * backends for the server's connections, named `verify_bench`, and its own processes), which moves
 * less than a rate when other work shares the machine.
 *
 *   node --import tsx bench/verify.bench.ts [seconds per run=10] [rounds=3] [sqlite|postgres]
 */
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuTicks, figure, median, postgresTicks, report, type Figure } from './lib.ts';
import { machine } from './peers.ts';
import { freshDatabase, prepareCustomer, serveAcceptance, settleDatabase } from './setup.ts';

const SECONDS = Number(process.argv[2] ?? 10);
const ROUNDS = Math.max(1, Number(process.argv[3] ?? 3));
const STORE = process.argv[4] ?? 'sqlite';
const CONNECTIONS = 64;

type Request = { method: string; path: string; headers: Record<string, string>; body?: string };
type Autocannon = (opts: object) => Promise<{ requests: { average: number }; latency: { p99: number }; non2xx: number; errors: number; '2xx': number; duration: number; statusCodeStats?: Record<string, { count: number }> }>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

/**
 * Numbers never used twice in a service (a second create to a pending number is a resend), 9 to a
 * number range (the number without its last 3 digits), 72,000 to an area code: 576,000 in all over
 * eight, enough for the warm-up and five rounds at 9,000 creates a second (with fewer, a fast
 * machine's later rounds measured resends and refusals instead of creates).
 * Nine, one fewer than the conversion rule's minimum (CONVERSION_MIN_SENT): at ten unconverted
 * codes a range is blocked, and `monitor` records the block and announces it, a write once per
 * range that is the guard's verdict, not its lookups, and no part of a legitimate create.
 * Consecutive numbers are in different ranges, as people asking for codes are: creates to one
 * range wait for each other (the guard counts a range's verifications exactly, under a lock of the
 * range on PostgreSQL), so 64 connections sending to a few ranges at a time would measure that
 * wait, which is a pumping attack's, not the creates' cost.
 */
function numbers(areaCodes: readonly string[]): () => string {
  const ranges = areaCodes.length * 8000;
  let i = 0;
  return () => {
    const range = i % ranges;
    const line = Math.floor(i / ranges) % 9;
    const area = areaCodes[Math.floor(range / 8000)];
    const number = `+1${area}${200 + (Math.floor(range / 10) % 800)}${range % 10}${String(line).padStart(3, '0')}`;
    i++;
    return number;
  };
}

const dir = mkdtempSync(join(tmpdir(), 'pigeon-bench-verify-'));
try {
  const databaseUrl = await freshDatabase(STORE, dir, 'verify_bench');
  const { key } = await prepareCustomer(databaseUrl);
  // On PostgreSQL the server's connections are named, for the database's CPU spent on them.
  const { server, base } = await serveAcceptance(STORE === 'postgres' ? `${databaseUrl}&application_name=verify_bench` : databaseUrl);
  const databaseTicks = async () => (STORE === 'postgres' ? await postgresTicks(databaseUrl, 'verify_bench') : new Map<number, number>());
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const json = (await res.json()) as { data: { id: string } };
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json.data;
  };
  const service = async (guard: 'monitor' | 'off') => (await api('POST', '/v1/verify/services', { name: `Bench ${guard}`, from: 'Bench', fraud_guard: guard })).id;
  const guarded = await service('monitor');
  const unguarded = await service('off');
  const guardedNumber = numbers(['415', '510', '408', '209', '559', '661', '805', '916']);
  const unguardedNumber = numbers(['650', '707', '925', '530', '619', '714', '760', '818']);
  const poolNumber = numbers(['312', '773', '872', '630', '708', '847', '815', '217']);

  /** Runs `SECONDS` of one kind of request, each made afresh; the rate of 2xx answers, the server's (and database's) CPU µs per 2xx answer. */
  const run = async (make: () => Request): Promise<{ rate: number; p99: number; cpu: number; database: number }> => {
    await settleDatabase(databaseUrl);
    const ticks = cpuTicks(server.child.pid!);
    const database0 = await databaseTicks();
    const r = await autocannon({
      url: base,
      connections: CONNECTIONS,
      duration: SECONDS,
      requests: [{ setupRequest: (req: object) => ({ ...req, ...make() }) }],
    });
    if (r.non2xx > 0 || r.errors > 0) console.error(`# ${r.non2xx} non-2xx answers (${JSON.stringify(r.statusCodeStats)}) and ${r.errors} errors, left out of the rate`);
    const serveTicks = cpuTicks(server.child.pid!) - ticks;
    let database = 0;
    for (const [pid, t] of await databaseTicks()) database += t - (database0.get(pid) ?? 0);
    const answered = Math.max(1, r['2xx']);
    // The CPU of the request, in µs: the server's and the database server's together.
    return { rate: r['2xx'] / r.duration, p99: r.latency.p99, cpu: ((serveTicks + database) * 10_000) / answered, database: (database * 10_000) / answered };
  };
  // Plain sends go to numbers drawn as the creates' are, one each: a message's row is indexed by its
  // recipient (retention's erasure by number), and sends all to one number would write that index at
  // one place, where the creates' messages write it at a page each, a cost of the recipients and
  // not of Verify.
  const sendNumber = numbers(['212', '646', '718', '917', '347', '929', '516', '631']);
  const send = () => run(() => ({ method: 'POST', path: '/v1/sms/send', headers: { ...headers }, body: JSON.stringify({ to: sendNumber(), from: 'Bench', message: 'Your Bench code is 123456' }) }));
  const create = (serviceId: string, number: () => string) => run(() => ({ method: 'POST', path: `/v1/verify/services/${serviceId}/verifications`, headers: { ...headers }, body: JSON.stringify({ to: number() }) }));

  // Warm-up, unmeasured: the server compiles its hot paths in its first seconds, the creates' as
  // much as the sends' (without this the first round's first create run paid for it).
  const warm = await send();
  await create(guarded, guardedNumber);
  await create(unguarded, unguardedNumber);

  /**
   * Checks: five wrong codes to each verification (all its checks), over verifications made just
   * before, as many as 1.5 times the fastest rate seen so far (at least 2,500/s) would use: a
   * cold server's warm-up is slow, and checks ran out of verifications when sized on it. Past
   * them, a check is a cheap 404, left out of the rate but not out of the CPU time.
   */
  let fastest = Math.max(2500, warm.rate);
  const check = async () => {
    const pool: string[] = [];
    const count = Math.ceil((fastest * SECONDS * 1.5) / 5);
    for (let i = 0; i < count; i += 200) {
      const made = await Promise.all(Array.from({ length: Math.min(200, count - i) }, () => api('POST', `/v1/verify/services/${unguarded}/verifications`, { to: poolNumber() })));
      pool.push(...made.map((v) => v.id));
    }
    let checked = 0;
    return run(() => ({ method: 'POST', path: `/v1/verify/services/${unguarded}/checks`, headers: { ...headers }, body: JSON.stringify({ verification_id: pool[Math.floor(checked++ / 5) % pool.length], code: '000000' }) }));
  };

  const rounds: { send: number; on: number; off: number; check: number; p99: Record<string, number>; cpu: Record<string, number> }[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const r: Record<string, { rate: number; p99: number; cpu: number; database: number }> = {};
    // The guard's pair turns each round: on, off / off, on.
    const order = round % 2 === 0 ? ['send', 'on', 'off', 'check'] : ['check', 'off', 'on', 'send'];
    for (const what of order) {
      r[what] = what === 'send' ? await send() : what === 'on' ? await create(guarded, guardedNumber) : what === 'off' ? await create(unguarded, unguardedNumber) : await check();
      fastest = Math.max(fastest, r[what]!.rate);
    }
    rounds.push({
      send: r.send!.rate,
      on: r.on!.rate,
      off: r.off!.rate,
      check: r.check!.rate,
      p99: Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.p99])),
      cpu: Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.cpu])),
    });
    const cpu = (k: string) => `${r[k]!.cpu.toFixed(0)} µs CPU${STORE === 'postgres' ? `, ${r[k]!.database.toFixed(0)} of them PostgreSQL's` : ''}`;
    console.log(
      `# round ${round + 1}: send ${r.send!.rate.toFixed(0)}/s (p99 ${r.send!.p99} ms, ${cpu('send')}), create guard on ${r.on!.rate.toFixed(0)}/s (p99 ${r.on!.p99} ms, ${cpu('on')}), off ${r.off!.rate.toFixed(0)}/s (p99 ${r.off!.p99} ms, ${cpu('off')}), check ${r.check!.rate.toFixed(0)}/s (p99 ${r.check!.p99} ms, ${cpu('check')}) (${machine()})`,
    );
  }
  await server.stop();

  const spread = (values: number[]) => `${Math.min(...values).toFixed(2)}-${Math.max(...values).toFixed(2)}`;
  const createCost = rounds.map((r) => r.send / r.on);
  const checkCost = rounds.map((r) => r.send / r.check);
  const guardCost = rounds.map((r) => r.off / r.on);
  const createCpu = rounds.map((r) => r.cpu.on! / r.cpu.send!);
  const checkCpu = rounds.map((r) => r.cpu.check! / r.cpu.send!);
  const guardCpu = rounds.map((r) => r.cpu.on! / r.cpu.off!);
  console.log(`# by rate: a create costs ${spread(createCost)} × a send, a check ${spread(checkCost)} ×, the guard ${spread(guardCost)} × over the rounds`);
  console.log(`# by CPU per request${STORE === 'postgres' ? ' (the server and PostgreSQL)' : ''}: a create costs ${spread(createCpu)} × a send, a check ${spread(checkCpu)} ×, the guard ${spread(guardCpu)} × over the rounds`);
  const figures: Figure[] = [
    figure(`verify (${STORE}) plain sends/s, median`, median(rounds.map((r) => r.send)), 'req/s'),
    figure(`verify (${STORE}) creates/s with the guard on (monitor), median`, median(rounds.map((r) => r.on)), 'req/s'),
    figure(`verify (${STORE}) creates/s with the guard off, median`, median(rounds.map((r) => r.off)), 'req/s'),
    figure(`verify (${STORE}) checks/s, median`, median(rounds.map((r) => r.check)), 'req/s'),
    figure(`verify (${STORE}) a create's cost in plain sends (send rate / create rate), median`, median(createCost), '×', { max: 1.5 }),
    figure(`verify (${STORE}) a check's cost in plain sends, median`, median(checkCost), '×', { max: 1 }),
    figure(`verify (${STORE}) the guard's cost (creates off / on), median`, median(guardCost), '×'),
    figure(`verify (${STORE}) a create's cost in plain sends by CPU per request, median`, median(createCpu), '×', { max: 1.5 }),
    figure(`verify (${STORE}) a check's cost in plain sends by CPU per request, median`, median(checkCpu), '×', { max: 1 }),
    figure(`verify (${STORE}) the guard's cost by CPU per request (on / off), median`, median(guardCpu), '×'),
  ];
  // "No measurable cost", read as: the guard's median ratio under 1.1, about the spread of a
  // quiet machine's rounds (on a loaded one the rounds' own spread is larger than any cost).
  const guardMet = (ratios: number[]) => median(ratios) < 1.1;
  console.log(
    `# goals: create ≤ 1.5 × send ${median(createCost) < 1.5 ? 'met' : 'not met'} by rate, ${median(createCpu) < 1.5 ? 'met' : 'not met'} by CPU; ` +
      `check ≤ 1 × send ${median(checkCost) < 1 ? 'met' : 'not met'} by rate, ${median(checkCpu) < 1 ? 'met' : 'not met'} by CPU; ` +
      `guard not measurable ${guardMet(guardCost) ? 'met' : 'not met'} by rate, ${guardMet(guardCpu) ? 'met' : 'not met'} by CPU`,
  );
  report(figures);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
