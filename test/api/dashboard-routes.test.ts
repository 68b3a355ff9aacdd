/**
 * The operator console's Routes, Margin and Messages pages (DECISIONS.md §11): routes listed with
 * their link state, added, changed and removed through the forms, never showing a password; the
 * margin per day and route; one message with the route that took it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { harness, type Harness } from '../helpers/harness.ts';
import { DashboardClient, signedInOperator } from '../helpers/dashboard-client.ts';
import { listRoutes } from '../../src/services/routes/routes.ts';
import { recordMessageRoutes } from '../../src/store/repositories/messages.repository.ts';

const form = {
  name: 'uk-main',
  prefixes: '+44, +353',
  host: '127.0.0.1',
  port: '2775',
  system_id: 'acme',
  password: 'Sekr3t!x',
  system_type: '',
  tps: '50',
  window: '20',
  priority: '10',
  cost_per_segment: '2',
  failover_codes: '0x45,0x08',
};

describe('dashboard: the operator manages routes and reads the margin', () => {
  let h: Harness;
  let ops: DashboardClient;
  before(async () => {
    h = await harness();
    ops = await signedInOperator(h.app, h.ctx);
  });
  after(() => h.close());

  test('the pages need an operator session', async () => {
    for (const url of ['/operator/routes', '/operator/margin', '/operator/messages']) {
      const res = await h.app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 303, url);
    }
  });

  test('add, list (unbound: no worker process), change, remove; the password never on a page', async () => {
    const empty = await ops.get('/operator/routes');
    assert.equal(empty.statusCode, 200);
    assert.match(empty.body, /No routes yet/);
    const added = await ops.post('/operator/routes', form, empty.body);
    assert.equal(added.statusCode, 303, added.body);
    const list = await ops.get(added.headers.location as string);
    assert.match(list.body, /Route uk-main is added/);
    assert.match(list.body, /uk-main<\/strong>/);
    assert.match(list.body, /\+44, \+353/);
    assert.match(list.body, /Unbound/);
    assert.match(list.body, /no worker process running/);
    assert.ok(!list.body.includes(form.password));
    const [route] = await listRoutes(h.ctx);
    assert.deepEqual([route!.prefixes, route!.priority, route!.tps, route!.window, route!.cost_per_segment, route!.failover_codes], [['+44', '+353'], 10, 50, 20, 2, ['0x45', '0x08']]);

    const taken = await ops.post('/operator/routes', form, list.body);
    assert.equal(taken.statusCode, 409);
    assert.match(taken.body, /exists already/);
    const bad = await ops.post('/operator/routes', { ...form, name: 'other', prefixes: '44' }, list.body);
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /is not a prefix/);
    assert.equal((await listRoutes(h.ctx)).length, 1, 'nothing written for a refused form');

    const edit = await ops.get('/operator/routes/uk-main');
    assert.equal(edit.statusCode, 200);
    assert.ok(!edit.body.includes(form.password), 'the edit form leaves the password out');
    // An empty password keeps the stored one.
    const saved = await ops.post('/operator/routes/uk-main', { ...form, password: '', priority: '3', cost_per_segment: '' }, edit.body);
    assert.equal(saved.statusCode, 303, saved.body);
    const [changed] = await listRoutes(h.ctx);
    assert.equal(changed!.priority, 3);
    assert.equal(changed!.cost_per_segment, null);
    const stored = await h.ctx.store.db.selectFrom('smpp_routes').select('password').executeTakeFirstOrThrow();
    assert.equal(stored.password, form.password);

    assert.equal((await ops.get('/operator/routes/nothing')).statusCode, 404);
    const page = await ops.get('/operator/routes');
    const removed = await ops.post('/operator/routes/uk-main/remove', {}, page.body);
    assert.equal(removed.statusCode, 303);
    assert.deepEqual(await listRoutes(h.ctx), []);
  });

  test('the margin page and one message with its route', async () => {
    const { key } = await h.customer({ credits: 100 });
    const sent = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447700900123', from: 'Acme', message: 'x'.repeat(200) } });
    assert.equal(sent.statusCode, 200, sent.body);
    const id = sent.json().message_id as string;
    await h.workers.drain();
    // The simulator has no routes: what an SMPP route records when it takes the message.
    await recordMessageRoutes(h.ctx.store.db, [{ id, route: 'uk-main', route_cost: 4, routes_tried: 'uk-backup' }]);

    const day = new Date(h.clock.now()).toISOString().slice(0, 10);
    const margin = await ops.get(`/operator/margin?from=${day}&to=${day}`);
    assert.equal(margin.statusCode, 200);
    assert.match(margin.body, new RegExp(`<td data-label="Day">${day}</td><td data-label="Route">uk-main</td><td data-label="Messages">1</td><td data-label="Segments">2</td><td data-label="Credits charged">2</td><td data-label="Carrier cost">4</td><td data-label="Margin">-2</td>`));
    const wrong = await ops.get('/operator/margin?from=nope&to=2026-01-01');
    assert.equal(wrong.statusCode, 400);
    assert.match(wrong.body, /--from is a date/);

    const shown = await ops.get(`/operator/messages?id=${id}`);
    assert.equal(shown.statusCode, 200);
    assert.match(shown.body, /<strong id="message-route">uk-main<\/strong>/);
    assert.match(shown.body, /uk-backup/);
    assert.ok(!shown.body.includes('x'.repeat(50)), 'no body on the operator view');
    assert.equal((await ops.get('/operator/messages?id=msg_nothing')).statusCode, 404);

    const customerView = await h.request('GET', `/v1/sms/delivery-reports?message_id=${id}`, { key });
    assert.ok(customerView.body.includes(id) && !/uk-main|route/.test(customerView.body), customerView.body);
  });
});
