import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { countAuditEvents, deleteAuditEventsBefore, insertAuditEvent, listAuditEvents, type AuditEventRow } from '../../src/store/repositories/audit-events.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';

function row(id: string, at: number, over: Partial<AuditEventRow> = {}): AuditEventRow {
  return {
    id,
    at,
    account_id: 'acc_1',
    actor_type: 'member',
    actor_id: 'own_1',
    actor_email: 'a@example.com',
    action: 'api_key.created',
    target_type: 'api_key',
    target_id: 'key_1',
    ip: '127.0.0.1',
    changes: '{}',
    ...over,
  };
}

describe('audit events repository', () => {
  forEachDialect((_dialect, open) => {
    it('lists newest first, filtered by account, action, resource and time', async () => {
      const store = await open();
      await insertAuditEvent(store.db, row('aud_1', 1_000));
      await insertAuditEvent(store.db, row('aud_2', 2_000, { action: 'api_key.revoked' }));
      await insertAuditEvent(store.db, row('aud_3', 3_000, { account_id: 'acc_2', action: 'credits.added' }));
      await insertAuditEvent(store.db, row('aud_4', 4_000, { account_id: null, action: 'route.added' }));
      assert.deepEqual((await listAuditEvents(store.db, {}, 10, 0)).map((r) => r.id), ['aud_4', 'aud_3', 'aud_2', 'aud_1']);
      assert.deepEqual((await listAuditEvents(store.db, { accountId: 'acc_1' }, 10, 0)).map((r) => r.id), ['aud_2', 'aud_1']);
      assert.deepEqual((await listAuditEvents(store.db, { group: 'api_key' }, 10, 0)).map((r) => r.id), ['aud_2', 'aud_1']);
      assert.deepEqual((await listAuditEvents(store.db, { action: 'credits.added' }, 10, 0)).map((r) => r.id), ['aud_3']);
      assert.deepEqual((await listAuditEvents(store.db, { since: 2_000 }, 2, 1)).map((r) => r.id), ['aud_3', 'aud_2']);
      assert.equal(await countAuditEvents(store.db, { since: 2_000 }), 3);
      assert.equal(await countAuditEvents(store.db, { accountId: 'acc_9' }), 0);
    });

    it('refuses any update of a record, on the store itself', async () => {
      const store = await open();
      await insertAuditEvent(store.db, row('aud_1', 1_000));
      await assert.rejects(store.db.updateTable('audit_events').set({ action: 'nothing' }).where('id', '=', 'aud_1').execute(), /append-only/);
      await assert.rejects(sql`update audit_events set changes = '{}'`.execute(store.db), /append-only/);
      assert.equal((await listAuditEvents(store.db, {}, 10, 0))[0]?.action, 'api_key.created');
    });

    it('deletes only records older than the cutoff, oldest first, a batch at a time', async () => {
      const store = await open();
      for (let i = 1; i <= 5; i++) await insertAuditEvent(store.db, row(`aud_${i}`, i * 1_000));
      assert.equal(await deleteAuditEventsBefore(store.db, 4_500, 2), 2);
      assert.deepEqual((await listAuditEvents(store.db, {}, 10, 0)).map((r) => r.id), ['aud_5', 'aud_4', 'aud_3']);
      assert.equal(await deleteAuditEventsBefore(store.db, 4_500, 2), 2);
      assert.equal(await deleteAuditEventsBefore(store.db, 4_500, 2), 0);
      assert.deepEqual((await listAuditEvents(store.db, {}, 10, 0)).map((r) => r.id), ['aud_5']);
    });
  });
});
