import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SmppCarrier } from '../../src/carriers/smpp/smpp-carrier.ts';
import { start } from '../../src/runtime.ts';
import { TestSmsc } from './smsc.ts';

let smsc: TestSmsc;
let env: Record<string, string>;
before(async () => {
  smsc = new TestSmsc({ systemId: 'pigeon', password: 'secret' });
  const port = await smsc.listen();
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-smpp-'));
  env = {
    CARRIER: 'smpp',
    SMPP_HOST: '127.0.0.1',
    SMPP_PORT: String(port),
    SMPP_SYSTEM_ID: 'pigeon',
    SMPP_PASSWORD: 'secret',
    DATABASE_URL: `sqlite:${join(dir, 'pigeon.db')}`,
    PORT: '0',
    LOG_LEVEL: 'silent',
  };
});
after(() => smsc.stop());

test('only a process with workers binds: serve --no-workers never connects to the SMSC', async () => {
  const api = await start({ api: true, workers: false, env });
  try {
    assert.match(api.carrier.status().detail, /only in processes that run workers/);
    const ready = await api.app!.inject({ method: 'GET', url: '/ready' });
    assert.equal(ready.statusCode, 200);
    // Its links were never started: no socket, so no bind can come later either.
    assert.deepEqual(
      (api.carrier as SmppCarrier).links.map((l) => l.state),
      ['idle'],
    );
    assert.equal(smsc.binds, 0);
  } finally {
    await api.stop();
  }
  const worker = await start({ api: false, workers: true, env });
  try {
    await (worker.carrier as SmppCarrier).whenBound();
    assert.equal(smsc.binds, 1);
    assert.match(worker.carrier.status().detail, /1 route\(s\) bound/);
  } finally {
    await worker.stop();
  }
});
