import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DONE_SEQ, deleteDoneGroups, deletePartGroup, insertPart, lockPartGroup, markGroupDone, partsOfGroup, staleGroups, type InboundPartRow } from '../../src/store/repositories/inbound-parts.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';

function part(group: string, seq: number, at: number, body = `p${seq}`): InboundPartRow {
  return { group_key: group, seq, total: 3, sender: '+447911123456', recipient: '+447700900001', body, encoding: 'GSM-7', received_at: at };
}

forEachDialect((_dialect, open) => {
  test('parts are kept once per place, listed in order, found stale by their first part, deleted by group', async () => {
    const store = await open();
    await store.db.transaction().execute(async (trx) => {
      await lockPartGroup(trx, 'g1');
      await insertPart(trx, part('g1', 3, 30));
      await insertPart(trx, part('g1', 1, 10));
    });
    await insertPart(store.db, part('g1', 1, 40, 'repeat'));
    await insertPart(store.db, part('g2', 2, 50));
    assert.deepEqual((await partsOfGroup(store.db, 'g1')).map((p) => [p.seq, p.body]), [[1, 'p1'], [3, 'p3']]);
    assert.deepEqual(await staleGroups(store.db, 20, 10), ['g1']);
    assert.deepEqual(await staleGroups(store.db, 60, 10), ['g1', 'g2']);
    assert.deepEqual(await staleGroups(store.db, 60, 1), ['g1']);
    await deletePartGroup(store.db, 'g1');
    assert.deepEqual(await partsOfGroup(store.db, 'g1'), []);
    assert.deepEqual(await staleGroups(store.db, 60, 10), ['g2']);
  });

  test('a done group keeps its parts behind its mark, is never stale, and is deleted once its mark is old enough', async () => {
    const store = await open();
    await insertPart(store.db, part('done', 1, 10));
    await insertPart(store.db, part('done', 2, 11));
    await markGroupDone(store.db, part('done', 1, 10), 20);
    await markGroupDone(store.db, part('done', 1, 10), 25);
    await insertPart(store.db, part('waiting', 1, 12));
    assert.deepEqual((await partsOfGroup(store.db, 'done')).map((p) => [p.seq, p.body, p.received_at === 20]), [[DONE_SEQ, '', true], [1, 'p1', false], [2, 'p2', false]]);
    assert.deepEqual(await staleGroups(store.db, 100, 10), ['waiting']);
    assert.equal(await deleteDoneGroups(store.db, 20), 0);
    assert.equal(await deleteDoneGroups(store.db, 21), 3);
    assert.deepEqual(await partsOfGroup(store.db, 'done'), []);
    assert.equal((await partsOfGroup(store.db, 'waiting')).length, 1);
  });
});
