/**
 * Memory from one key: a customer with an `sms:send` key fires 150 sends at once, each with a
 * 4 MiB field (the body limit, 5 MiB, lets them through to the parser). Every one is answered 400
 * with that field's code, the server's peak RSS stays under 450 MiB (before the field limits and
 * the byte-bounded caches, over-long `from` values were kept as cache keys and it passed 800 MiB),
 * and it goes on serving: the next valid send succeeds.
 *
 * The server is a real `pigeon serve` child process, so its RSS is its own (read from /proc).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '../../src/store/connect.ts';
import { createCustomer } from '../helpers/customers.ts';
import { freePort, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { processDatabase, serviceContext, testDialect } from '../helpers/test-store.ts';

const PARALLEL = 150;
const FIELD_BYTES = 4 * 1024 * 1024;
/**
 * What is live stays small (the body budget lets about 20 MiB of bodies be read at once); the rest
 * of the peak is garbage the collector has not yet taken, and how much of it V8 keeps depends on
 * Node's version: from about 170 MiB after start, measured peaks were 303–326 MiB on Node 20 and
 * 362–412 MiB on Node 24. The bound is well under the 800 MiB that unbounded caches reached.
 */
const RSS_LIMIT_KIB = 450 * 1024;

/** Peak and current resident set size of a process, in KiB. */
function memoryOf(pid: number): { peak: number; now: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { peak: kib('VmHWM'), now: kib('VmRSS') };
}

describe(`150 parallel sends with 4 MiB fields (${testDialect})`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-memory-'));
  const database = processDatabase('memory', dir);
  let server: PigeonProcess | null = null;
  let store: Store;

  before(async () => {
    store = await database.open();
  });

  after(async () => {
    await server?.kill();
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('all 400 with the field’s code, RSS stays under 450 MiB, the next valid send succeeds', { timeout: 180_000 }, async () => {
    const ctx = serviceContext(store, { DATABASE_URL: database.url });
    const { key } = await createCustomer(ctx, { name: 'Memory', email: 'memory@example.com', credits: 100, label: 'memory' });

    const port = await freePort();
    server = await startPigeon(['serve'], { DATABASE_URL: database.url, PORT: String(port), HOST: '127.0.0.1', RATE_LIMIT_MAX: '1000000' });
    const pid = server.child.pid!;

    const valid = { to: '+447911123456', from: 'Acme', message: 'hello' };
    const big = 'x'.repeat(FIELD_BYTES);
    // Each over-long field, and the code a client is told.
    const bodies: [string, string][] = [
      [JSON.stringify({ ...valid, from: big }), 'invalid_sender_id'],
      [JSON.stringify({ ...valid, to: `+${'4'.repeat(FIELD_BYTES)}` }), 'invalid_recipient'],
      [JSON.stringify({ ...valid, callback_url: `https://localhost/${big}` }), 'invalid_callback_url'],
      [JSON.stringify({ ...valid, message: big }), 'invalid_message'],
    ];
    const send = async (body: string) => {
      const res = await fetch(`http://127.0.0.1:${port}/v1/sms/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(120_000),
      });
      return { status: res.status, json: (await res.json()) as { code?: string } };
    };

    const results = await Promise.all(
      Array.from({ length: PARALLEL }, async (_, i) => {
        const [body, code] = bodies[i % bodies.length]!;
        return { expected: code, ...(await send(body)) };
      }),
    );
    for (const r of results) {
      assert.equal(r.status, 400, JSON.stringify(r.json));
      assert.equal(r.json.code, r.expected);
    }
    const memory = memoryOf(pid);
    assert.ok(memory.peak < RSS_LIMIT_KIB, `peak RSS ${Math.round(memory.peak / 1024)} MiB (now ${Math.round(memory.now / 1024)} MiB)`);

    const ok = await send(JSON.stringify(valid));
    assert.equal(ok.status, 200, JSON.stringify(ok.json));
    assert.equal(server.child.exitCode, null, 'the server is still running');
  });
});
