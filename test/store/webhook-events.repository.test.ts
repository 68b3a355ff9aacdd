import assert from 'node:assert/strict';
import { test } from 'node:test';
import { enqueueJobs } from '../../src/store/repositories/jobs.repository.ts';
import {
  accountsByIds,
  attemptsAndNextRuns,
  insertWebhookAttempts,
  requeueUndeliveredEvent,
  setWebhookEventAttempted,
  unattemptedEventsOfMessages,
  webhookEventOfAccount,
  webhookEventsByIds,
  webhookEventsPage,
  type WebhookEventRow,
} from '../../src/store/repositories/webhook-events.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { insertAccount } from './fixtures.ts';

function event(id: string, messageId: string, createdAt: number, over: Partial<WebhookEventRow> = {}): WebhookEventRow {
  return {
    id,
    account_id: 'acc_a',
    message_id: messageId,
    batch_id: null,
    event: 'sms.sent',
    url: 'https://127.0.0.1:9/hook',
    payload: '{}',
    status: 'pending',
    attempts: 0,
    last_error: null,
    created_at: createdAt,
    updated_at: createdAt,
    ...over,
  };
}

forEachDialect((_dialect, open) => {
  test('the worker loads events, their accounts and the unattempted events of their messages', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await store.db
      .insertInto('webhook_events')
      .values([event('whe_1', 'msg_1', 10), event('whe_2', 'msg_1', 20, { attempts: 1 }), event('whe_3', 'msg_2', 30, { status: 'delivered' })])
      .execute();
    assert.deepEqual((await webhookEventsByIds(store.db, ['whe_1', 'whe_3', 'whe_none'])).map((e) => e.id).sort(), ['whe_1', 'whe_3']);
    assert.deepEqual((await accountsByIds(store.db, ['acc_a', 'acc_none'])).map((a) => a.id), ['acc_a']);
    assert.deepEqual(
      (await unattemptedEventsOfMessages(store.db, ['msg_1', 'msg_2'])).map((e) => ({ ...e, created_at: Number(e.created_at) })),
      [{ id: 'whe_1', message_id: 'msg_1', created_at: 10 }],
    );
  });

  test('an attempt is recorded on the event and listed with the next run of its job', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await store.db.insertInto('webhook_events').values([event('whe_1', 'msg_1', 10)]).execute();
    await enqueueJobs(store.db, [{ queue: 'webhook', ref: 'whe_1', runAt: 500 }], 10);
    await setWebhookEventAttempted(store.db, 'whe_1', { status: 'pending', attempts: 1, lastError: 'HTTP 500', updatedAt: 40 });
    await insertWebhookAttempts(store.db, [
      { id: 'wha_2', event_id: 'whe_1', attempt: 2, attempted_at: 50, http_status: null, error: 'timeout', latency_ms: 5 },
      { id: 'wha_1', event_id: 'whe_1', attempt: 1, attempted_at: 40, http_status: 500, error: 'HTTP 500', latency_ms: 3 },
    ]);
    const row = (await webhookEventsByIds(store.db, ['whe_1']))[0]!;
    assert.deepEqual([row.status, row.attempts, row.last_error, Number(row.updated_at)], ['pending', 1, 'HTTP 500', 40]);
    const found = await attemptsAndNextRuns(store.db, ['whe_1']);
    assert.deepEqual(found.attempts.map((a) => a.attempt), [1, 2]);
    assert.deepEqual(found.nextRuns.map((j) => ({ ref: j.ref, run_at: Number(j.run_at) })), [{ ref: 'whe_1', run_at: 500 }]);
  });

  test('the list filters, pages newest first and counts; a retry requeues only an undelivered event', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertAccount(store, 'acc_b');
    await store.db
      .insertInto('webhook_events')
      .values([
        event('whe_1', 'msg_1', 10, { status: 'undelivered' }),
        event('whe_2', 'msg_1', 10, { batch_id: 'bat_1' }),
        event('whe_3', 'msg_2', 30, { batch_id: 'bat_1' }),
        event('whe_4', 'msg_3', 40, { account_id: 'acc_b' }),
      ])
      .execute();
    const all = await webhookEventsPage(store.db, { accountId: 'acc_a' }, 2, 0);
    assert.deepEqual([all.rows.map((r) => r.id), all.total], [['whe_3', 'whe_2'], 3]);
    const next = await webhookEventsPage(store.db, { accountId: 'acc_a' }, 2, 2);
    assert.deepEqual(next.rows.map((r) => r.id), ['whe_1']);
    assert.deepEqual((await webhookEventsPage(store.db, { accountId: 'acc_a', messageId: 'msg_1' }, 10, 0)).total, 2);
    assert.deepEqual((await webhookEventsPage(store.db, { accountId: 'acc_a', batchId: 'bat_1', status: 'pending' }, 10, 0)).total, 2);
    assert.deepEqual((await webhookEventsPage(store.db, { accountId: 'acc_a', status: 'undelivered' }, 10, 0)).rows.map((r) => r.id), ['whe_1']);
    assert.equal(await webhookEventOfAccount(store.db, 'whe_4', 'acc_a'), undefined);
    assert.equal((await webhookEventOfAccount(store.db, 'whe_4', 'acc_b'))?.id, 'whe_4');
    assert.equal(await requeueUndeliveredEvent(store.db, 'whe_2', 50), false);
    assert.equal(await requeueUndeliveredEvent(store.db, 'whe_1', 50), true);
    assert.equal(await requeueUndeliveredEvent(store.db, 'whe_1', 60), false);
    const requeued = await webhookEventOfAccount(store.db, 'whe_1', 'acc_a');
    assert.deepEqual([requeued?.status, Number(requeued?.updated_at)], ['pending', 50]);
  });
});
