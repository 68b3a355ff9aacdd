/** "Moving from Twilio" lists every Twilio code the API answers with, and the whole failure-code mapping. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { twilioCatalogue } from '../../src/errors/twilio-catalogue.ts';
import { DELIVERY_ERROR_MAP, TWILIO_DELIVERY_ERRORS } from '../../src/domain/twilio-message.ts';
import { GUIDES } from '../../src/http/routes/docs.ts';

const guide = readFileSync(new URL('../../docs/guides/moving-from-twilio.md', import.meta.url), 'utf8');
const rows = guide.split('\n').filter((l) => /^\| \d{5} \|/.test(l));

test('every API error code has its row, and no row names a code the API does not have', () => {
  const documented = rows.map((r) => Number(/^\| (\d{5}) /.exec(r)![1])).filter((c) => c < 30000 || c >= 30009);
  assert.deepEqual(documented.sort(), Object.keys(twilioCatalogue).map(Number).sort());
  for (const [code, spec] of Object.entries(twilioCatalogue)) {
    const row = rows.find((r) => r.startsWith(`| ${code} |`))!;
    assert.match(row, new RegExp(`\\| ${spec.status} \\|`), `${code}'s HTTP status`);
  }
});

test('every delivery code has its row listing exactly the failure codes that map to it', () => {
  for (const code of Object.keys(TWILIO_DELIVERY_ERRORS)) {
    const row = rows.find((r) => r.startsWith(`| ${code} |`));
    assert.ok(row, code);
    const listed = [...row.split('|')[3]!.matchAll(/`([a-z0-9_]+)`/g)].map((m) => m[1]!).filter((c) => !c.startsWith('smpp_status_'));
    const mapped = Object.entries(DELIVERY_ERROR_MAP).filter(([, c]) => String(c) === code).map(([p]) => p);
    assert.deepEqual(listed.sort(), mapped.sort(), code);
  }
});

test('the guide is served with the others', () => {
  assert.ok((GUIDES as readonly string[]).includes('moving-from-twilio'));
});
