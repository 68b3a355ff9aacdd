import assert from 'node:assert/strict';
import { test } from 'node:test';
import { callingCodeOf, parseCallingCodes } from './calling-codes.ts';

test('a number belongs to the calling code it starts with', () => {
  assert.equal(callingCodeOf('+447911123456'), '44');
  assert.equal(callingCodeOf('+14155550100'), '1');
  assert.equal(callingCodeOf('+33612345678'), '33');
  assert.equal(callingCodeOf('+380501234567'), '380');
  assert.equal(callingCodeOf('+2348031234567'), '234');
});

test('lists of calling codes are checked, deduplicated and sorted', () => {
  assert.deepEqual(parseCallingCodes('44,33'), { ok: true, codes: ['33', '44'] });
  assert.deepEqual(parseCallingCodes(' +44 , 1,44'), { ok: true, codes: ['1', '44'] });
  assert.equal(parseCallingCodes('').ok, false);
  assert.equal(parseCallingCodes('44,999').ok, false);
  assert.equal(parseCallingCodes('44,GB').ok, false);
  assert.equal(parseCallingCodes('0044').ok, false);
});
