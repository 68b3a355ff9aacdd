/**
 * An e-mail address belongs to one account, whichever way the account is made: the operator's
 * command line refuses a second (test/cli/cli.test.ts), and so does the dashboard's sign-up.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount, listAccounts } from '../../src/services/accounts/accounts.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';
import { harness } from '../helpers/harness.ts';

test('a dashboard sign-up with the e-mail address of an operator-made account is refused', async () => {
  const h = await harness();
  try {
    await createAccount(h.ctx, { name: 'Made by the operator', email: 'taken@example.com' });
    const client = new DashboardClient(h.app);
    const form = await client.get('/dashboard/signup');
    const res = await client.post('/dashboard/signup', { name: 'Someone', email: 'Taken@Example.com', password: 'correct horse battery' }, form.body);
    assert.equal(res.statusCode, 409, res.body);
    assert.match(res.body, /already exists/);
    assert.equal((await listAccounts(h.ctx, { email: 'taken@example.com' })).length, 1, 'no second account');
    await assert.rejects(createAccount(h.ctx, { name: 'Again', email: ' TAKEN@example.com ' }), (err: { code?: string }) => err.code === 'email_taken');
  } finally {
    await h.close();
  }
});
