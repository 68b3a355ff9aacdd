/** The client's audit log methods against a real Pigeon server. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Pigeon, PigeonApiError } from '../src/index.ts';
import { liveServer, type LiveServer } from './server.ts';

describe('client: audit events', () => {
  let server: LiveServer;
  before(async () => {
    server = await liveServer();
  });
  after(() => server.close());

  test('lists, filters and iterates the account log, newest first; a bad filter is invalid_request', async () => {
    const { key } = await server.h.customer({ credits: 10 });
    const pigeon = new Pigeon({ apiKey: key, baseUrl: server.baseUrl, sleep: async () => {} });
    await pigeon.optOuts.add('+447911000003');
    await pigeon.optOuts.remove('+447911000003');
    const page = await pigeon.auditEvents.list({ action: 'opt_out' });
    assert.deepEqual(page.data.map((e) => e.action), ['opt_out.removed', 'opt_out.added']);
    assert.equal(page.data[0]!.actor.type, 'api_key');
    assert.deepEqual(page.data[1]!.changes.phone, [null, '+447911000003']);
    const all: string[] = [];
    for await (const e of pigeon.auditEvents.iterate({ limit: 1 })) all.push(e.action);
    assert.ok(all.length >= 3 && all.includes('api_key.created'), all.join());
    await assert.rejects(pigeon.auditEvents.list({ since: 'soon' }), (e) => e instanceof PigeonApiError && e.code === 'invalid_request' && e.status === 400);
  });
});
