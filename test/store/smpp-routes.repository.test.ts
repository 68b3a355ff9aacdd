import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createAccount } from '../../src/services/accounts/accounts.ts';
import type { MessagesTable } from '../../src/store/database.ts';
import { isUniqueViolation } from '../../src/store/dialect.ts';
import { insertMessages, messagesByIds, recordMessageRoutes } from '../../src/store/repositories/messages.repository.ts';
import {
  countSmppRoutes,
  deleteSmppRoute,
  insertSmppRoutes,
  liveRouteLinks,
  marginByDayAndRoute,
  messageForOperator,
  readRouteRevision,
  smppRouteRow,
  smppRouteRows,
  updateSmppRoute,
  writeRouteLinks,
  type SmppRouteRow,
} from '../../src/store/repositories/smpp-routes.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { serviceContext } from '../helpers/test-store.ts';

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 1);

function route(name: string, over: Partial<SmppRouteRow> = {}): SmppRouteRow {
  return {
    name,
    prefixes: '+44,+353',
    host: '127.0.0.1',
    port: 2775,
    system_id: 'acme',
    password: 'pw',
    system_type: '',
    tps: 0,
    window_size: 10,
    priority: 0,
    cost_per_segment: 2,
    failover_codes: '8,20,69,88',
    created_at: T0,
    updated_at: T0,
    ...over,
  };
}

function message(accountId: string, id: string, over: Partial<MessagesTable>): MessagesTable {
  return {
    id,
    account_id: accountId,
    batch_id: null,
    recipient: '+447700900123',
    sender: 'ACME',
    body: 'hello',
    encoding: 'GSM-7',
    segments: 1,
    status: 'sent',
    callback_url: null,
    carrier_message_id: null,
    error_code: null,
    error_message: null,
    created_at: T0,
    sent_at: T0,
    delivered_at: null,
    updated_at: T0,
    send_at: null,
    validity_period: null,
    expires_at: null,
    charged: 1,
    ...over,
  };
}

forEachDialect((_dialect, open) => {
  test('routes: insert, read, update, delete; every change moves the revision; a name is unique', async () => {
    const store = await open();
    const r0 = await readRouteRevision(store.db);
    await insertSmppRoutes(store.db, [route('b', { priority: 5 }), route('a', { cost_per_segment: null })]);
    const r1 = await readRouteRevision(store.db);
    assert.ok(r1 > r0);
    assert.equal(await countSmppRoutes(store.db), 2);
    assert.deepEqual((await smppRouteRows(store.db)).map((r) => [r.name, r.priority, r.cost_per_segment, r.window_size]), [
      ['a', 0, null, 10],
      ['b', 5, 2, 10],
    ]);
    await assert.rejects(insertSmppRoutes(store.db, [route('a')]), (err) => isUniqueViolation(err));
    const { name: _n, created_at: _c, ...changes } = route('a', { priority: 9, updated_at: T0 + 1 });
    assert.ok(await updateSmppRoute(store.db, 'a', changes));
    assert.equal((await smppRouteRow(store.db, 'a'))?.priority, 9);
    const r2 = await readRouteRevision(store.db);
    assert.ok(r2 > r1);
    assert.ok(!(await updateSmppRoute(store.db, 'nothing', changes)));
    assert.ok(await deleteSmppRoute(store.db, 'a'));
    assert.ok(!(await deleteSmppRoute(store.db, 'a')));
    assert.ok((await readRouteRevision(store.db)) > r2);
    assert.deepEqual((await smppRouteRows(store.db)).map((r) => r.name), ['b']);
  });

  test('links: each process replaces its own rows; stale rows of a dead process go', async () => {
    const store = await open();
    await writeRouteLinks(store.db, 'p1', [{ route: 'a', state: 'bound', last_error: null, seen_at: T0 }], T0 - 5000);
    await writeRouteLinks(store.db, 'p2', [{ route: 'a', state: 'connecting', last_error: 'refused', seen_at: T0 }], T0 - 5000);
    await writeRouteLinks(store.db, 'p1', [{ route: 'a', state: 'idle', last_error: 'gone', seen_at: T0 + 1000 }], T0 - 4000);
    assert.deepEqual(
      (await liveRouteLinks(store.db, T0 - 5000)).map((l) => [l.process, l.state, l.last_error]),
      [
        ['p1', 'idle', 'gone'],
        ['p2', 'connecting', 'refused'],
      ],
    );
    await writeRouteLinks(store.db, 'p3', [], T0 + 10_000);
    assert.deepEqual(await liveRouteLinks(store.db, 0), []);
  });

  test('the route of each message, and the margin per UTC day and route', async () => {
    const store = await open();
    const accountId = (await createAccount(serviceContext(store), { name: 'Acme', email: 'margin@example.com', credits: 0 })).id;
    await insertMessages(store.db, [
      message(accountId, 'msg_1', { segments: 2, sent_at: T0 + 10 }),
      message(accountId, 'msg_2', { segments: 3, sent_at: T0 + DAY - 1 }),
      message(accountId, 'msg_3', { segments: 1, sent_at: T0 + DAY, charged: 0 }),
      message(accountId, 'msg_4', { segments: 4, sent_at: T0 + 20 }),
      message(accountId, 'msg_5', { segments: 1, status: 'pending', sent_at: null }),
    ]);
    await recordMessageRoutes(store.db, [
      { id: 'msg_1', route: 'uk', route_cost: 4, routes_tried: null },
      { id: 'msg_2', route: 'uk', route_cost: 6, routes_tried: 'eu' },
      { id: 'msg_3', route: 'uk', route_cost: 2, routes_tried: null },
      { id: 'msg_4', route: 'eu', route_cost: null, routes_tried: null },
      { id: 'msg_5', route: null, route_cost: null, routes_tried: 'uk,eu' },
    ]);
    const [m2, m5] = await messagesByIds(store.db, ['msg_2', 'msg_5']).then((rows) => ['msg_2', 'msg_5'].map((id) => rows.find((r) => r.id === id)!));
    assert.deepEqual([m2!.route, Number(m2!.route_cost), m2!.routes_tried], ['uk', 6, 'eu']);
    assert.deepEqual([m5!.route, m5!.route_cost, m5!.routes_tried], [null, null, 'uk,eu']);
    assert.deepEqual(
      await marginByDayAndRoute(store.db, T0, T0 + 2 * DAY),
      [
        { day: T0, route: 'eu', messages: 1, segments: 4, credits: 4, cost: 0 },
        { day: T0, route: 'uk', messages: 2, segments: 5, credits: 5, cost: 10 },
        { day: T0 + DAY, route: 'uk', messages: 1, segments: 1, credits: 0, cost: 2 },
      ],
    );
    assert.deepEqual(await marginByDayAndRoute(store.db, T0 + DAY, T0 + 2 * DAY), [{ day: T0 + DAY, route: 'uk', messages: 1, segments: 1, credits: 0, cost: 2 }]);
    const shown = await messageForOperator(store.db, 'msg_3');
    assert.deepEqual([shown?.route, shown?.credits, shown?.route_cost, shown?.segments], ['uk', 0, 2, 1]);
    assert.equal(await messageForOperator(store.db, 'msg_x'), undefined);
  });
});
