import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from './ids.ts';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const decode = (s: string) => [...s].reduce((v, c) => v * 32 + ALPHABET.indexOf(c), 0);

test('newId: the prefix, 10 characters of the time, 4 of a sequence, 12 random ones, all Crockford base32', () => {
  const now = 1_764_380_000_123;
  const id = newId('msg', now);
  assert.match(id, /^msg_[0-9abcdefghjkmnpqrstvwxyz]{26}$/);
  assert.equal(decode(id.slice(4, 14)), now);
});

test('newId: ids of one millisecond count up, later ones sort after, and the random part differs', () => {
  const now = 1_764_380_000_500;
  const ids = Array.from({ length: 1000 }, (_, i) => newId('job', now + Math.floor(i / 100)));
  assert.deepEqual([...ids].sort(), ids);
  const first = ids.slice(0, 100).map((id) => decode(id.slice(14, 18)));
  first.forEach((s, i) => assert.equal(s, first[0]! + i));
  assert.equal(new Set(ids.map((id) => id.slice(18))).size, ids.length);
  // Earlier strings are never changed by later ids (the characters are written into a shared buffer).
  const kept = newId('led', now + 50);
  const copy = `${kept}`;
  newId('led', now + 51);
  assert.equal(kept, copy);
});
