/**
 * What a large rate card costs on the send path: one `pigeon serve --no-workers` on SQLite, two
 * customers, one priced from the flat `default` card (`+ → 1`), the other from a card of 100,000
 * prefixes whose longest match for the recipient is 8 characters deep. Their sends are measured
 * in turn, round after round, the order swapped each round, so that the two figures of a round
 * are seconds apart on a machine whose speed drifts. Also times the card's import.
 *
 * Prints, for each, the median requests/s over the rounds with its spread (lowest–highest), the
 * median ratio carded/flat with its spread, the server's CPU time per send (read from /proc, which
 * a busy machine disturbs far less than the rate) and its ratio, and each side's median p99.
 *
 *   node --import tsx bench/pricing.bench.ts [seconds per run=10] [rounds=5]
 *   PRICING_BENCH_CONTROL=1 node --import tsx bench/pricing.bench.ts ...   both on the flat card:
 *     what two identical customers differ by on this machine, the yardstick for the real run
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startPigeon } from '../test/helpers/processes.ts';
import { serviceContext } from '../test/helpers/test-store.ts';
import { createAccount } from '../src/services/accounts/accounts.ts';
import { createApiKey } from '../src/services/keys/api-keys.ts';
import { importCard, setAccountRateCard } from '../src/services/pricing/rate-cards.ts';
import { approveSenderId, registerSenderId } from '../src/services/sender-ids/sender-ids.ts';
import { openStore } from '../src/store/connect.ts';
import { migrateToLatest } from '../src/store/migrate.ts';
import { cpuTicks, figure, load, median, report } from './lib.ts';
import { machine } from './peers.ts';
import { freshDatabase } from './setup.ts';

const SECONDS = Number(process.argv[2] ?? 10);
const ROUNDS = Math.max(1, Number(process.argv[3] ?? 5));
const WARMUP = Math.max(1, Math.min(3, Math.round(SECONDS / 3)));
const PREFIXES = 100_000;

const dir = mkdtempSync(join(tmpdir(), 'pigeon-bench-pricing-'));
try {
  const databaseUrl = await freshDatabase('sqlite', dir);
  const store = openStore(databaseUrl);
  await migrateToLatest(store.db);
  const ctx = serviceContext(store, { DATABASE_URL: databaseUrl });
  const customer = async (name: string) => {
    const account = await createAccount(ctx, { name, email: `${name}@example.com`, credits: 100_000_000 });
    const key = await createApiKey(ctx, account.id, { label: 'bench' });
    await approveSenderId(ctx, (await registerSenderId(ctx, account.id, 'Bench')).id);
    return { accountId: account.id, key: key.key };
  };
  const flat = await customer('flat');
  const carded = await customer('carded');
  // +1400000 … +1499999: the recipient +14155552671 matches +1415555, 8 characters deep.
  let csv = 'prefix,credits_per_segment\n+,1\n';
  for (let i = 0; i < PREFIXES; i++) csv += `+14${String(i).padStart(5, '0')},${1 + (i % 5)}\n`;
  const started = performance.now();
  await importCard(ctx, 'large', csv);
  const importSeconds = (performance.now() - started) / 1000;
  if (process.env.PRICING_BENCH_CONTROL !== '1') await setAccountRateCard(ctx, carded.accountId, 'large');
  await store.close();

  const port = await freePort();
  const server = await startPigeon(['serve', '--no-workers'], {
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    SMPP_SERVER_PORT: '0',
    RATE_LIMIT_MAX: '100000000',
    DISPATCH_BACKLOG_LIMIT: '100000000',
  });
  const runs: Record<'flat' | 'carded', { rate: number; p99: number; cpuUs: number }[]> = { flat: [], carded: [] };
  try {
    const send = (key: string, seconds: number) =>
      load(`http://127.0.0.1:${port}/v1/sms/send`, {
        connections: 64,
        seconds,
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: '+14155552671', from: 'Bench', message: 'Your code is 123456' }),
      });
    await send(flat.key, WARMUP);
    await send(carded.key, WARMUP);
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 === 1 ? (['flat', 'carded'] as const) : (['carded', 'flat'] as const);
      for (const which of order) {
        const ticks = cpuTicks(server.child.pid!);
        const r = await send(which === 'flat' ? flat.key : carded.key, SECONDS);
        // The server's own CPU time per answer: far less sensitive than the rate to what else
        // the machine runs meanwhile.
        const cpuUs = ((cpuTicks(server.child.pid!) - ticks) * 10_000) / Math.max(1, r.total);
        if (r.non2xx > 0) console.error(`#   ${which}: ${r.non2xx} answers were not 2xx`);
        runs[which].push({ rate: r.requestsPerSecond, p99: r.p99, cpuUs });
        console.error(`#   round ${round} ${which}: ${Math.round(r.requestsPerSecond)} req/s, p99 ${r.p99} ms, ${Math.round(cpuUs)} µs server CPU per send (${machine()})`);
      }
    }
  } finally {
    await server.stop();
  }
  const ratios = runs.carded.map((c, i) => (c.rate / runs.flat[i]!.rate) * 100);
  const rates = (which: 'flat' | 'carded') => runs[which].map((r) => r.rate);
  report([
    figure(`rate card import (${PREFIXES.toLocaleString('en')} prefixes) seconds`, importSeconds, 's'),
    figure('send, flat default card, median requests/s', median(rates('flat')), 'req/s'),
    figure('send, flat default card, lowest requests/s', Math.min(...rates('flat')), 'req/s'),
    figure('send, flat default card, highest requests/s', Math.max(...rates('flat')), 'req/s'),
    figure('send, 100,000-prefix card, median requests/s', median(rates('carded')), 'req/s'),
    figure('send, 100,000-prefix card, lowest requests/s', Math.min(...rates('carded')), 'req/s'),
    figure('send, 100,000-prefix card, highest requests/s', Math.max(...rates('carded')), 'req/s'),
    figure('send, 100,000-prefix card / flat, median of rounds', median(ratios), '%'),
    figure('send, 100,000-prefix card / flat, lowest round', Math.min(...ratios), '%'),
    figure('send, 100,000-prefix card / flat, highest round', Math.max(...ratios), '%'),
    figure('send, flat default card, median server CPU per send', median(runs.flat.map((r) => r.cpuUs)), 'µs'),
    figure('send, 100,000-prefix card, median server CPU per send', median(runs.carded.map((r) => r.cpuUs)), 'µs'),
    figure('send, server CPU per send 100,000-prefix card / flat, median of rounds', median(runs.carded.map((c, i) => (c.cpuUs / runs.flat[i]!.cpuUs) * 100)), '%'),
    figure('send, server CPU per send 100,000-prefix card / flat, lowest round', Math.min(...runs.carded.map((c, i) => (c.cpuUs / runs.flat[i]!.cpuUs) * 100)), '%'),
    figure('send, server CPU per send 100,000-prefix card / flat, highest round', Math.max(...runs.carded.map((c, i) => (c.cpuUs / runs.flat[i]!.cpuUs) * 100)), '%'),
    figure('send, flat default card, median p99', median(runs.flat.map((r) => r.p99)), 'ms'),
    figure('send, 100,000-prefix card, median p99', median(runs.carded.map((r) => r.p99)), 'ms'),
  ]);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
