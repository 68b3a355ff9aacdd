/**
 * `pigeon route`, `pigeon message show` and `pigeon report margin` through real child processes,
 * against a live `pigeon serve` bound to SMSCs on 127.0.0.1 (DECISIONS.md §11): SMPP_ROUTES fills
 * the table, and a route added, changed or removed from the CLI reaches the server within 2 s.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, pigeonCli, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { createCustomer } from '../helpers/customers.ts';
import { processDatabase, serviceContext } from '../helpers/test-store.ts';
import type { Store } from '../../src/store/connect.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { TestSmsc } from '../smpp/smsc.ts';

const dir = mkdtempSync(join(tmpdir(), 'pigeon-routes-'));
const database = processDatabase('routes_cli', dir);
const env = { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'warn' };
const pigeon = (...args: string[]) => pigeonCli(env, ...args);
/** What a change made from the CLI may take to reach the server. */
const PROPAGATION_MS = 2000;

describe('pigeon route against a live server', () => {
  const ukCredentials = { systemId: 'uk-user', password: 'uk-pass' };
  let uk: TestSmsc;
  let fr: TestSmsc;
  let server: PigeonProcess;
  let port: number;
  let key: string;
  let store: Store;

  before(async () => {
    uk = new TestSmsc(ukCredentials);
    fr = new TestSmsc({ systemId: 'fr-user', password: 'fr-pass' });
    uk.autoReceipt = { stat: 'DELIVRD' };
    fr.autoReceipt = { stat: 'DELIVRD' };
    await Promise.all([uk.listen(), fr.listen()]);
    store = await database.open();
    key = (await createCustomer(serviceContext(store), { name: 'Acme Ltd', email: 'ops@acme.test', credits: 100 })).key;
    port = await freePort();
    server = await startPigeon(['serve'], {
      DATABASE_URL: database.url,
      PORT: String(port),
      CARRIER: 'smpp',
      SMPP_RECONNECT_MIN_MS: '50',
      SMPP_RECONNECT_MAX_MS: '200',
      SMPP_ROUTES: JSON.stringify([{ name: 'uk', prefixes: ['+44'], host: '127.0.0.1', port: uk.port, system_id: 'uk-user', password: 'uk-pass', cost_per_segment: 1 }]),
    });
  });
  after(async () => {
    await server?.stop();
    await Promise.all([uk.stop(), fr.stop()]);
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const send = async (to: string) => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/sms/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to, from: 'Acme', message: 'hello' }),
    });
    const body = (await res.json()) as { message_id: string };
    assert.equal(res.status, 200, JSON.stringify(body));
    return body.message_id;
  };

  /** The message's status, read from the database (a CLI process per poll would cost seconds). */
  const status = async (id: string) => (await store.db.selectFrom('messages').select('status').where('id', '=', id).executeTakeFirst())?.status;

  const listed = async () => {
    const list = await pigeon('route', 'list');
    assert.equal(list.code, 0, list.stderr);
    assert.ok(!/pass/.test(list.stdout), `route list shows a password: ${list.stdout}`);
    return list.json.data as { name: string; prefixes: string[]; priority: number; bound: boolean; host: string; port: number }[];
  };

  test('SMPP_ROUTES filled the table: route list --json has it bound, never with its password', async () => {
    await waitFor(() => uk.binds === 1, { timeout: 10_000, message: () => server.output() });
    // The server writes its links' state within a second of a change.
    const [route] = await waitFor(
      async () => {
        const routes = await listed();
        return routes.every((r) => r.bound) ? routes : null;
      },
      { timeout: 5000, interval: 500, message: () => server.output() },
    );
    assert.deepEqual(
      { name: route!.name, prefixes: route!.prefixes, priority: route!.priority, bound: route!.bound, host: route!.host, port: route!.port },
      { name: 'uk', prefixes: ['+44'], priority: 0, bound: true, host: '127.0.0.1', port: uk.port },
    );
    assert.equal(uk.binds, 1);
  });

  test('a route added from the CLI binds within 2 s and takes its traffic; message show and report margin say so', async () => {
    const added = await pigeon('route', 'add', 'fr', '--prefixes', '+33', '--host', '127.0.0.1', '--port', String(fr.port), '--system-id', 'fr-user', '--password', 'fr-pass', '--cost-per-segment', '2');
    assert.equal(added.code, 0, added.stderr);
    assert.ok(!added.stdout.includes('fr-pass'));
    const at = Date.now();
    await waitFor(() => fr.binds === 1, { timeout: PROPAGATION_MS, message: () => `no bind within 2 s\n${server.output()}` });
    console.log(`# route add reached the server in ${Date.now() - at} ms`);

    const id = await send('+33612345678');
    await waitFor(async () => (await status(id)) === 'delivered', { timeout: 10_000, message: () => server.output() });
    const shown = await pigeon('message', 'show', id);
    assert.equal(shown.code, 0, shown.stderr);
    assert.equal(shown.json.status, 'delivered');
    assert.ok(!('message' in shown.json) && !('body' in shown.json));
    assert.equal(shown.json.route, 'fr');
    assert.equal(shown.json.carrier_cost, 2);
    assert.equal(shown.json.credits_charged, 1);
    assert.deepEqual(fr.acknowledged.map((s) => s.destination), ['33612345678']);

    const day = new Date().toISOString().slice(0, 10);
    const [margin, bad] = await Promise.all([pigeon('report', 'margin', '--from', day, '--to', day), pigeon('report', 'margin', '--from', 'yesterday', '--to', day)]);
    assert.equal(margin.code, 0, margin.stderr);
    assert.deepEqual(margin.json.data, [{ day, route: 'fr', messages: 1, segments: 1, credits_charged: 1, carrier_cost: 2, margin: -1 }]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--from/);
  });

  test('new credentials from the CLI bind again within 2 s; a removed route unbinds within 2 s', async () => {
    const binds = uk.binds;
    ukCredentials.password = 'uk-new';
    const [updated, removed] = await Promise.all([pigeon('route', 'update', 'uk', '--password', 'uk-new', '--priority', '3'), pigeon('route', 'remove', 'fr')]);
    assert.equal(updated.code, 0, updated.stderr);
    assert.equal(updated.json.priority, 3);
    assert.equal(removed.code, 0, removed.stderr);
    await Promise.all([
      waitFor(() => uk.binds > binds, { timeout: PROPAGATION_MS, message: () => `no new bind within 2 s\n${server.output()}` }),
      waitFor(() => fr.connections === 0, { timeout: PROPAGATION_MS, message: () => `still bound after 2 s\n${server.output()}` }),
    ]);
    const id = await send('+33612345679');
    await waitFor(async () => (await status(id)) === 'failed', { timeout: 10_000, message: () => server.output() });
    const [names, failed, again, taken, wrong] = await Promise.all([
      listed().then((routes) => routes.map((r) => r.name)),
      pigeon('message', 'show', id),
      pigeon('route', 'remove', 'fr'),
      pigeon('route', 'add', 'uk', '--prefixes', '+44', '--host', '127.0.0.1', '--port', '1', '--system-id', 'x', '--password', 'y'),
      pigeon('route', 'add', 'bad', '--prefixes', '44', '--host', '127.0.0.1', '--port', '1', '--system-id', 'x', '--password', 'y'),
    ]);
    assert.deepEqual(names, ['uk']);
    assert.equal(failed.json.error_code, 'no_route');
    assert.equal(failed.json.route, null);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /No route fr/);
    assert.equal(taken.code, 1);
    assert.match(taken.stderr, /route_name_taken|exists already/);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /is not a prefix/);
    assert.ok(!/uk-pass|uk-new|fr-pass/.test(server.output()), 'a password reached the log');

    // doctor binds to the table's routes, not to the variables (here: none).
    const doctor = await pigeonCli({ ...env, CARRIER: 'smpp' }, 'doctor');
    const carrier = JSON.parse(doctor.stdout).checks.find((c: { name: string }) => c.name === 'carrier');
    assert.deepEqual(carrier, { name: 'carrier', ok: true, detail: 'smpp: 1 route(s) bound' });
    assert.ok(!/uk-new/.test(doctor.stdout));
  });
});
