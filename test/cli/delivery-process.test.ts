/**
 * `pigeon serve` delivers from a child process it supervises: messages accepted by the API reach
 * the carrier through it; a child that dies is restarted, with `/ready` saying so meanwhile; the
 * child leaves with its parent, whether the parent stops cleanly or is killed.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '../../src/store/connect.ts';
import { createCustomer } from '../helpers/customers.ts';
import { freePort, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { processDatabase, serviceContext, type ProcessDatabase } from '../helpers/test-store.ts';
import { waitFor } from '../helpers/wait-for.ts';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const childPids = (server: PigeonProcess) => server.deliveryPids();

describe('the delivery process of pigeon serve', () => {
  let dir: string;
  let db: ProcessDatabase;
  let store: Store;
  let env: Record<string, string>;
  let base: string;
  let key: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pigeon-delivery-'));
    db = processDatabase('delivery', dir);
    store = await db.open();
    ({ key } = await createCustomer(serviceContext(store), { name: 'Acme', email: 'ops@acme.test', credits: 100 }));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = { DATABASE_URL: db.url, PORT: String(port), SMPP_SERVER_PORT: '0', SIM_DELIVERY_DELAY_MS: '0', LOG_FORMAT: 'json' };
  });
  after(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function send(to: string): Promise<string> {
    const res = await fetch(`${base}/v1/sms/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to, from: 'Acme', message: 'hi' }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    return ((await res.json()) as { message_id: string }).message_id;
  }

  async function delivered(id: string): Promise<boolean> {
    const res = await fetch(`${base}/v1/sms/delivery-reports?message_id=${id}`, { headers: { authorization: `Bearer ${key}` } });
    return ((await res.json()) as { data: { status: string }[] }).data[0]?.status === 'delivered';
  }

  test('delivers what the API accepts, is restarted when it dies, and stops with its parent', async () => {
    const server = await startPigeon(['serve'], env);
    try {
      const [first] = childPids(server);
      assert.ok(first && alive(first), `a delivery process was announced:\n${server.output()}`);
      assert.notEqual(first, server.child.pid);
      const ready = await fetch(`${base}/ready`);
      assert.equal(ready.status, 200);
      assert.deepEqual(((await ready.json()) as { checks: Record<string, string> }).checks.workers, 'ok');

      const id = await send('+447911123456');
      await waitFor(() => delivered(id), { message: 'the first message delivered by the delivery process' });
      // The dispatch counters are the child's; the server's /metrics adds them to its own.
      const metrics = await (await fetch(`${base}/metrics`)).text();
      assert.match(metrics, /^pigeon_carrier_submits_total\{carrier="simulator",outcome="accepted"\} [1-9]/m);

      process.kill(first, 'SIGKILL');
      const down = await waitFor(
        async () => {
          const res = await fetch(`${base}/ready`);
          return res.status === 503 ? ((await res.json()) as { checks: Record<string, string> }) : null;
        },
        { message: '/ready to say the delivery process is down' },
      );
      assert.match(down.checks.workers!, /delivery process killed by SIGKILL; restarting in 1 s/);
      // Accepted while the child is down: it waits in its queue for the next child.
      const waiting = await send('+447911123457');
      const second = await waitFor(() => childPids(server)[1], { message: `a second delivery process:\n${server.output()}` });
      assert.notEqual(second, first);
      await waitFor(() => delivered(waiting), { message: 'the message accepted while the child was down, delivered' });
      assert.equal((await fetch(`${base}/ready`)).status, 200);

      assert.equal(await server.stop(), 0);
      assert.equal(alive(second), false, 'SIGTERM to serve stops its delivery process before serve exits');
    } finally {
      await server.kill();
    }
  });

  test('a server killed with SIGKILL takes its delivery process with it', async () => {
    const server = await startPigeon(['serve'], env);
    const [child] = childPids(server);
    assert.ok(child && alive(child));
    // The server alone, not its tree: the child must notice its parent is gone.
    server.child.kill('SIGKILL');
    await waitFor(() => !alive(child), { timeout: 15_000, message: 'the orphaned delivery process to leave' });
  });

  test('--one-process keeps the workers in the server, as before', async () => {
    const server = await startPigeon(['serve', '--one-process'], env);
    try {
      assert.deepEqual(childPids(server), []);
      assert.match(server.output(), /"workers":true/);
      const id = await send('+447911123458');
      await waitFor(() => delivered(id), { message: 'delivered by the one process' });
    } finally {
      await server.stop();
    }
  });
});
