import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isAccountSid, maskAuthToken, messageIdOfSid, messageSidOf } from './twilio-sid.ts';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
/** An id as src/util/ids.ts makes them: 10 time characters (of `at`), then 16 others. */
function newId(prefix: string, at = Date.now()): string {
  let time = '';
  for (let v = at, i = 0; i < 10; i++, v = Math.floor(v / 32)) time = ALPHABET[v % 32] + time;
  let rest = '';
  for (let i = 0; i < 16; i++) rest += ALPHABET[Math.floor(Math.random() * 32)];
  return `${prefix}_${time}${rest}`;
}

test('a message id and its SM sid map to each other, both ways, for ids made now and far ahead', () => {
  for (const at of [Date.now(), 0, Date.UTC(2999, 0, 1)]) {
    for (let i = 0; i < 50; i++) {
      const id = newId('msg', at);
      const sid = messageSidOf(id)!;
      assert.match(sid, /^SM[0-9a-f]{32}$/);
      assert.equal(messageIdOfSid(sid), id);
    }
  }
  assert.equal(messageSidOf('msg_00000000000000000000000000'), `SM${'0'.repeat(32)}`);
  assert.equal(messageIdOfSid(`SM${'f'.repeat(32)}`), 'msg_7zzzzzzzzzzzzzzzzzzzzzzzzz');
});

test('inbound ids get SM sids too; other shapes get none', () => {
  assert.match(messageSidOf(newId('in'))!, /^SM[0-9a-f]{32}$/);
  assert.equal(messageSidOf('msg_short'), null);
  assert.equal(messageSidOf('msg_8zzzzzzzzzzzzzzzzzzzzzzzzz'), null, 'over 128 bits');
  assert.equal(messageSidOf('bat_00000000000000000000000000'), null);
  assert.equal(messageIdOfSid('SM123'), null);
  assert.equal(messageIdOfSid(`SM${'F'.repeat(32)}`), null, 'lowercase hex only');
  assert.equal(messageIdOfSid(`MM${'0'.repeat(32)}`), null);
});

test('account SIDs and masked tokens', () => {
  assert.equal(isAccountSid(`AC${'a1'.repeat(16)}`), true);
  assert.equal(isAccountSid(`AC${'A1'.repeat(16)}`), false);
  assert.equal(maskAuthToken('0123456789abcdef0123456789abcdef'), `${'*'.repeat(28)}cdef`);
});
