import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_TWIML_BYTES, readTwiml } from './twiml.ts';

test('messages are read from a Response, with entities, CDATA and Body', () => {
  assert.deepEqual(readTwiml('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Message>Thanks &amp; bye &#x1F600;</Message></Response>'), { ok: true, messages: ['Thanks & bye 😀'] });
  assert.deepEqual(readTwiml('<Response>\n  <Message><Body>one</Body></Message>\n  <!-- c --><Message><![CDATA[two <b>]]></Message></Response>'), { ok: true, messages: ['one', 'two <b>'] });
});

test('nothing to send: an empty answer, <Response/>, an empty Response or Message', () => {
  for (const body of ['', '  \n', '<Response/>', '<Response />', '<?xml version="1.0"?><Response></Response>', '<Response><Message/></Response>']) {
    assert.deepEqual(readTwiml(body), { ok: true, messages: [] }, body);
  }
});

test('anything else is refused whole', () => {
  for (const body of [
    'hello',
    '{"ok":true}',
    '<Response><Message>unclosed</Response>',
    '<Response><Redirect>https://x</Redirect></Response>',
    '<Response><Message to="+447700900123">elsewhere</Message></Response>',
    '<Response><Message>a <b>tag</b></Message></Response>',
    '<Response><Message>&bogus;</Message></Response>',
    '<Response><Message>a</Message></Response><Response/>',
    `<Response>${'<Message>x</Message>'.repeat(6)}</Response>`,
    `<Response><Message>${'x'.repeat(MAX_TWIML_BYTES)}</Message></Response>`,
  ]) {
    assert.equal(readTwiml(body).ok, false, body.slice(0, 80));
  }
});
