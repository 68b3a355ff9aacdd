import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { assertNotLocked, clearLoginFailures, LOCKOUT_MS, recordLoginFailure } from '../../src/services/auth/login-throttle.ts';

describe('login lockout with backoff', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  async function locked(email: string, ip: string): Promise<number | null> {
    try {
      await assertNotLocked(h.ctx, 'owner', email, ip);
      return null;
    } catch (err) {
      assert.equal((err as { code: string }).code, 'login_locked');
      return Number((err as { headers: Record<string, string> }).headers['retry-after']);
    }
  }

  test('each lockout in a row lasts twice as long; a successful login resets it', async () => {
    const fail = async (n: number) => {
      for (let i = 0; i < n; i++) await recordLoginFailure(h.ctx, 'owner', 'ann@example.com', '10.0.0.1');
    };
    await fail(4);
    assert.equal(await locked('ann@example.com', '10.0.0.1'), null, 'four failures do not lock');
    await fail(1);
    assert.equal(await locked('ann@example.com', '10.0.0.1'), LOCKOUT_MS / 1000);
    assert.equal(await locked('bob@example.com', '10.0.0.2'), null, 'other pairs are not affected');
    h.clock.advance(LOCKOUT_MS);
    assert.equal(await locked('ann@example.com', '10.0.0.1'), null);
    await fail(5);
    assert.equal(await locked('ann@example.com', '10.0.0.1'), (2 * LOCKOUT_MS) / 1000, 'the second lockout is twice as long');
    h.clock.advance(2 * LOCKOUT_MS);
    await fail(5);
    assert.equal(await locked('ann@example.com', '10.0.0.1'), (4 * LOCKOUT_MS) / 1000);
    h.clock.advance(4 * LOCKOUT_MS);
    await clearLoginFailures(h.ctx, 'owner', 'ann@example.com', '10.0.0.1');
    await fail(5);
    assert.equal(await locked('ann@example.com', '10.0.0.1'), LOCKOUT_MS / 1000, 'after a success the backoff starts over');
  });

  test('one address trying many e-mails is locked out across them', async () => {
    for (let i = 0; i < 19; i++) await recordLoginFailure(h.ctx, 'owner', `user${i}@example.com`, '10.9.9.9');
    assert.equal(await locked('someone@example.com', '10.9.9.9'), null);
    await recordLoginFailure(h.ctx, 'owner', 'user19@example.com', '10.9.9.9');
    assert.equal(await locked('someone@example.com', '10.9.9.9'), LOCKOUT_MS / 1000, 'any e-mail from that address');
    assert.equal(await locked('someone@example.com', '10.9.9.8'), null, 'other addresses are not affected');
    assert.equal(await locked('user1@example.com', '10.9.9.9'), LOCKOUT_MS / 1000);
  });
});
