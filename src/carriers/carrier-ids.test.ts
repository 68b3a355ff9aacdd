import { test } from 'node:test';
import assert from 'node:assert/strict';
import { carrierIdKeys, matchRank, rankOfSpelling, SPELLING_OF_RANK } from './carrier-ids.ts';

const rank = (stored: string, receipt: string) => matchRank(carrierIdKeys(stored), carrierIdKeys(receipt));

test('case and leading zeros do not matter', () => {
  assert.deepEqual(carrierIdKeys(' 000A1B '), { key: 'a1b', alt: '2587' });
  assert.deepEqual(carrierIdKeys('0000'), { key: '0', alt: null });
  assert.equal(rank('000A1B', 'a1b'), 0);
  assert.equal(rank('00123', '123'), 0);
});

test('a hex id found from its decimal spelling and a decimal id from its hex spelling', () => {
  assert.equal(rank('0A1B2C', '662316'), 1);
  assert.equal(rank('12345', '3039'), 2);
  assert.equal(rank('12345', '00003039'), 2);
  assert.equal(rank('deadbeef', '3735928559'), 1);
});

test('exact spelling ranks before a converted one; unrelated ids do not match', () => {
  assert.ok(rank('16', '16')! < rank('10', '16')!);
  assert.equal(rank('123', '124'), null);
  assert.equal(rank('abc-1', 'abc-2'), null);
  assert.equal(carrierIdKeys('msg-1').alt, null);
});

test('a route that converts ids: the spelling names the match rank it produces', () => {
  assert.equal(rankOfSpelling(SPELLING_OF_RANK[rank('0A1B2C', '662316') as 1]), 1);
  assert.equal(SPELLING_OF_RANK[rank('12345', '3039') as 2], 'decimal_as_hex');
  assert.equal(rankOfSpelling('same'), null);
  assert.equal(rankOfSpelling(undefined), null);
});
