import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { changesBetween, parseActionFilter, REDACTED, redactChanges } from './audit.ts';

describe('audit redaction', () => {
  it('never keeps a secret field or message text, only whether it had a value', () => {
    const out = redactChanges({
      webhook_secret: ['whsec_old', 'whsec_new'],
      password: [null, 'hunter2hunter2'],
      twilio_auth_token: ['abc', 'def'],
      key: [null, 'pk_live_abcdefghijklmnopqrstuvwxyz012345'],
      password_hash: ['scrypt$a', 'scrypt$b'],
      message: [null, 'Your code is 1234'],
      body: ['hello', null],
      recovery_codes: [null, ['a', 'b']],
      label: ['old', 'new'],
    });
    assert.deepEqual(out.webhook_secret, [REDACTED, REDACTED]);
    assert.deepEqual(out.password, [null, REDACTED]);
    assert.deepEqual(out.twilio_auth_token, [REDACTED, REDACTED]);
    assert.deepEqual(out.key, [null, REDACTED]);
    assert.deepEqual(out.password_hash, [REDACTED, REDACTED]);
    assert.deepEqual(out.message, [null, REDACTED]);
    assert.deepEqual(out.body, [REDACTED, null]);
    assert.deepEqual(out.recovery_codes, [null, REDACTED]);
    assert.deepEqual(out.label, ['old', 'new']);
    assert.doesNotMatch(JSON.stringify(out), /whsec_|hunter2|pk_live_|scrypt|1234|hello/);
  });

  it('redacts secrets nested in a value and API keys in any field', () => {
    const out = redactChanges({
      route: [null, { name: 'eu', host: '127.0.0.1', system_id: 'pigeon', password: 'smpp-secret' }],
      note: [null, 'pk_live_abcdefghijklmnopqrstuvwxyz012345'],
    });
    assert.deepEqual(out.route, [null, { name: 'eu', host: '127.0.0.1', system_id: 'pigeon', password: REDACTED }]);
    assert.deepEqual(out.note, [null, REDACTED]);
  });

  it('keeps only the fields that changed', () => {
    assert.deepEqual(changesBetween({ a: 1, b: 'x', c: null }, { a: 1, b: 'y', c: null }), { b: ['x', 'y'] });
    assert.deepEqual(changesBetween(null, { a: 1 }), { a: [null, 1] });
    assert.deepEqual(changesBetween({ list: ['44'] }, { list: ['44', '33'] }), { list: [['44'], ['44', '33']] });
  });

  it('reads a filter as an action or a resource, and nothing else', () => {
    assert.deepEqual(parseActionFilter('api_key.created'), { action: 'api_key.created' });
    assert.deepEqual(parseActionFilter('api_key'), { group: 'api_key' });
    assert.equal(parseActionFilter('api_key.exploded'), null);
    assert.equal(parseActionFilter("'; drop table"), null);
  });
});
