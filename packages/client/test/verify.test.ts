/** The client's `verify.*` methods against a real Pigeon server; codes learned from what the carrier receives. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Pigeon, PigeonApiError, PigeonRateLimitError } from '../src/index.ts';
import { lastCode, phoneInbox, type PhoneInbox } from '../../../test/helpers/phone-inbox.ts';
import { liveServer, type LiveServer } from './server.ts';

describe('client: verify', () => {
  let server: LiveServer;
  let pigeon: Pigeon;
  let inbox: PhoneInbox;
  before(async () => {
    server = await liveServer({ SIM_DELIVERY_DELAY_MS: '0' });
    inbox = phoneInbox(server.h);
    const { key } = await server.h.customer({ credits: 100 });
    pigeon = new Pigeon({ apiKey: key, baseUrl: server.baseUrl, sleep: async () => {} });
  });
  after(() => server.close());

  const codeAt = (phone: string) => lastCode(server.h, inbox, phone);

  test('services: create, get, list, update, delete', async () => {
    const created = await pigeon.verify.createService({ name: 'Acme', from: 'Acme', code_length: 4 });
    assert.match(created.data.id, /^vsv_/);
    assert.equal(created.data.code_length, 4);
    assert.equal((await pigeon.verify.getService(created.data.id)).data.name, 'Acme');
    assert.ok((await pigeon.verify.listServices()).data.some((s) => s.id === created.data.id));
    const updated = await pigeon.verify.updateService(created.data.id, { lifetime_seconds: 120, allowed_countries: ['GB'] });
    assert.equal(updated.data.lifetime_seconds, 120);
    assert.deepEqual(updated.data.allowed_countries, ['GB']);
    assert.equal(updated.data.code_length, 4);
    await pigeon.verify.deleteService(created.data.id);
    await assert.rejects(pigeon.verify.getService(created.data.id), (e) => e instanceof PigeonApiError && e.code === 'not_found' && e.status === 404);
    await assert.rejects(pigeon.verify.createService({ name: 'Acme', from: 'Nobody' }), (e) => e instanceof PigeonApiError && e.code === 'invalid_sender_id');
  });

  test('a code is started, checked by number and by id, read back and canceled', async () => {
    const service = (await pigeon.verify.createService({ name: 'Acme', from: 'Acme', allowed_countries: ['GB'] })).data;
    const started = await pigeon.verify.start(service.id, '+447700900301');
    assert.equal(started.data.status, 'pending');
    assert.equal(started.data.sends, 1);
    const code = await codeAt('+447700900301');
    const wrong = await pigeon.verify.check(service.id, { to: '+447700900301', code: code === '000000' ? '111111' : '000000' });
    assert.deepEqual(wrong.data, { id: started.data.id, status: 'pending', valid: false, checks_left: 4 });
    const right = await pigeon.verify.check(service.id, { verification_id: started.data.id, code });
    assert.equal(right.data.valid, true);
    assert.equal((await pigeon.verify.get(started.data.id)).data.status, 'approved');
    const other = await pigeon.verify.start(service.id, '+447700900302');
    assert.equal((await pigeon.verify.cancel(other.data.id)).data.status, 'canceled');
    await assert.rejects(pigeon.verify.check(service.id, { to: '+447700900302', code: '123456' }), (e) => e instanceof PigeonApiError && e.code === 'not_found');
    // A send again within 30 s is rate limited, with the wait to retry.
    await pigeon.verify.start(service.id, '+447700900303');
    await assert.rejects(pigeon.verify.start(service.id, '+447700900303'), (e) => e instanceof PigeonRateLimitError && e.code === 'rate_limit_exceeded');
    await assert.rejects(pigeon.verify.start(service.id, '+33612345678'), (e) => e instanceof PigeonApiError && e.code === 'verify_country_blocked' && e.status === 403);
  });

  test('the safe list and the blocked ranges', async () => {
    const added = await pigeon.verify.safeList.add('+4477009004');
    assert.deepEqual(added, { status: 'success', data: { entry: '+4477009004' }, created: true });
    assert.equal((await pigeon.verify.safeList.add('+4477009004')).created, false);
    assert.deepEqual((await pigeon.verify.safeList.list()).data.map((e) => e.entry), ['+4477009004']);
    await pigeon.verify.safeList.remove('+4477009004');
    assert.deepEqual((await pigeon.verify.safeList.list()).data, []);
    assert.deepEqual((await pigeon.verify.blocks()).data, []);
  });
});
