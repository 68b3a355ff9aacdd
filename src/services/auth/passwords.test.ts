/** Password hashes: OWASP's scrypt cost, self-describing, checked at the cost they were made with. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hashCost, hashPassword, verifyPassword } from './passwords.ts';

test('a new hash is scrypt at N=2^17, r=8, p=1 with a fresh salt, and only its password matches', async () => {
  assert.equal(hashCost.N, 2 ** 17, 'production cost (tests lower it in test/helpers/hash-cost.ts, not here)');
  const [one, two] = await Promise.all([hashPassword('correct horse'), hashPassword('correct horse')]);
  assert.match(one, /^scrypt\$131072\$8\$1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/);
  assert.notEqual(one, two, 'each hash has its own salt');
  assert.equal(await verifyPassword('correct horse', one), true);
  assert.equal(await verifyPassword('correct horsE', one), false);
  // Unicode forms of one password are one password (NFKC).
  const composed = await hashPassword('caf\u00e9');
  assert.equal(await verifyPassword('cafe\u0301', composed), true);
});

test('a hash made at another cost is checked at its own cost; a malformed one never matches', async () => {
  const saved = hashCost.N;
  hashCost.N = 2 ** 10;
  try {
    const cheap = await hashPassword('pw');
    assert.match(cheap, /^scrypt\$1024\$8\$1\$/);
    hashCost.N = saved;
    assert.equal(await verifyPassword('pw', cheap), true);
  } finally {
    hashCost.N = saved;
  }
  for (const stored of ['', 'plain', 'bcrypt$1$2$3$4$5', 'scrypt$$8$1$c2FsdA==$aGFzaA==', 'scrypt$1024$8$1$c2FsdA==']) {
    assert.equal(await verifyPassword('pw', stored), false, stored);
  }
});
