import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findOperatorByEmail, findOperatorById, insertOperator, operatorEmailTaken } from '../../src/store/repositories/operators.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';

describe('operators repository', () => {
  forEachDialect((_dialect, open) => {
    it('stores an operator and finds it by id and by address', async () => {
      const store = await open();
      const row = { id: 'op_1', email: 'ops@example.com', password_hash: 'scrypt$x', created_at: 1_000, role: 'support' };
      assert.equal(await operatorEmailTaken(store.db, 'ops@example.com'), false);
      await insertOperator(store.db, row);
      // No second factor yet (migration 029).
      const stored = { ...row, totp_secret: null, totp_enabled_at: null, totp_last_step: null };
      assert.deepEqual(await findOperatorById(store.db, 'op_1'), stored);
      assert.deepEqual(await findOperatorByEmail(store.db, 'ops@example.com'), stored);
      assert.equal(await operatorEmailTaken(store.db, 'ops@example.com'), true);
      assert.equal(await findOperatorByEmail(store.db, 'other@example.com'), undefined);
      assert.equal(await findOperatorById(store.db, 'op_2'), undefined);
    });
  });
});
