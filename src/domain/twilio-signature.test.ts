import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { formBody, twilioSignature } from './twilio-signature.ts';

const require = createRequire(import.meta.url);

test('the signature is the one Twilio documents, and both twilio packages accept it', () => {
  // Twilio's documented example: https://www.twilio.com/docs/usage/security#validating-requests
  const token = '12345';
  const url = 'https://mycompany.com/myapp.php?foo=1&bar=2';
  const params = { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' };
  assert.equal(twilioSignature(token, url, params), '0/KCTR6DLpKmkAf8muzZqo1nDgQ=');
  for (const name of ['twilio5', 'twilio6']) {
    const twilio = require(name) as { validateRequest(t: string, s: string, u: string, p: object): boolean };
    const sig = twilioSignature('0123456789abcdef0123456789abcdef', 'https://127.0.0.1:8443/cb?x=1', { MessageSid: 'SM1', Body: 'a b&c=d' });
    assert.equal(twilio.validateRequest('0123456789abcdef0123456789abcdef', sig, 'https://127.0.0.1:8443/cb?x=1', { MessageSid: 'SM1', Body: 'a b&c=d' }), true, name);
    assert.equal(twilio.validateRequest('0123456789abcdef0123456789abcdee', sig, 'https://127.0.0.1:8443/cb?x=1', { MessageSid: 'SM1', Body: 'a b&c=d' }), false, name);
  }
});

test('the form body carries every parameter and reads back the same', () => {
  const params = { Body: 'héllo & bye+1', To: '+447700900123' };
  assert.deepEqual(Object.fromEntries(new URLSearchParams(formBody(params))), params);
});
