/**
 * The operator console's rate cards (DECISIONS.md §11): upload a CSV, see the difference with
 * nothing changed, apply it, export the card as CSV; a bad line is named and changes nothing; an
 * upload over the bound is refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { harness, type Harness } from '../helpers/harness.ts';
import { csrfToken, DashboardClient, signedInOperator } from '../helpers/dashboard-client.ts';
import { MAX_RATE_CSV_BYTES, showCard } from '../../src/services/pricing/rate-cards.ts';

describe('console: rate cards', () => {
  let h: Harness;
  let ops: DashboardClient;
  before(async () => {
    h = await harness();
    ops = await signedInOperator(h.app, h.ctx);
  });
  after(() => h.close());

  const csv = (text: string) => [{ name: 'file', filename: 'card.csv', type: 'text/csv', bytes: Buffer.from(text) }];

  test('upload shows the difference and changes nothing; apply changes the card; export gives it back as CSV', async () => {
    const list = await ops.get('/operator/rate-cards');
    assert.equal(list.statusCode, 200);
    assert.match(list.body, /<strong>default<\/strong>/);
    const upload = await ops.postMultipart('/operator/rate-cards/preview', { _csrf: csrfToken(list.body), card: 'gold', effective_from: '' }, csv('prefix,credits_per_segment\n+44,3\n+447,blocked\n'));
    assert.equal(upload.statusCode, 200, upload.body);
    assert.match(upload.body, /id="diff-summary">Importing into <strong>gold<\/strong> \(a new card\).*2 added, 0 raised, 0 lowered, 0 removed, 0 unchanged/s);
    assert.match(upload.body, /<code>\+447<\/code><\/td><td[^>]*>—<\/td><td[^>]*>blocked</);
    assert.equal((await ops.get('/operator/rate-cards/gold')).statusCode, 404, 'nothing changed yet');

    // The Apply form carries the file: posted back as the page has it.
    const apply = await ops.postMultipart('/operator/rate-cards/apply', { _csrf: csrfToken(upload.body), card: 'gold', effective_from: '', csv: 'prefix,credits_per_segment\n+44,3\n+447,blocked\n' }, []);
    assert.equal(apply.statusCode, 303, apply.body);
    const done = await ops.get(apply.headers.location as string);
    assert.match(done.body, /Rate card gold: 2 added/);
    assert.deepEqual((await showCard(h.ctx, 'gold')).entries.map((e) => [e.prefix, e.credits_per_segment]), [['+44', 3], ['+447', 'blocked']]);

    const raise = await ops.postMultipart('/operator/rate-cards/preview', { _csrf: csrfToken(done.body), card: 'gold', effective_from: '2030-01-01T00:00:00Z', replace: 'on' }, csv('prefix,credits_per_segment\n+44,5\n'));
    assert.match(raise.body, /0 added, 1 raised, 0 lowered, 1 removed, 0 unchanged/);
    assert.match(raise.body, /name="replace" value="1"/);
    assert.match(raise.body, /name="effective_from" value="2030-01-01T00:00:00Z"/);
    assert.match(raise.body, /<textarea name="csv" hidden>prefix,credits_per_segment\n\+44,5\n<\/textarea>/);

    const page = await ops.get('/operator/rate-cards/gold');
    assert.match(page.body, /In effect now: 2 prefixes/);
    const exported = await ops.get('/operator/rate-cards/gold/export');
    assert.equal(exported.statusCode, 200);
    assert.match(String(exported.headers['content-type']), /^text\/csv/);
    assert.match(String(exported.headers['content-disposition']), /attachment; filename="gold.csv"/);
    assert.equal(exported.body, 'prefix,credits_per_segment\n+44,3\n+447,blocked\n');
  });

  test('a bad line is named and nothing changes; an upload over the bound is refused', async () => {
    const list = await ops.get('/operator/rate-cards');
    const bad = await ops.postMultipart('/operator/rate-cards/preview', { _csrf: csrfToken(list.body), card: 'silver' }, csv('prefix,credits_per_segment\n+44,3\n+33,free\n'));
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /class="alert error"[^>]*>Line 3: credits_per_segment &quot;free&quot;/);
    const applied = await ops.postMultipart('/operator/rate-cards/apply', { _csrf: csrfToken(list.body), card: 'silver', csv: 'prefix,credits_per_segment\n+44,3\n+33,free\n' }, []);
    assert.equal(applied.statusCode, 400);
    assert.equal((await ops.get('/operator/rate-cards/silver')).statusCode, 404);
    const big = await ops.postMultipart('/operator/rate-cards/preview', { _csrf: csrfToken(list.body), card: 'silver' }, csv(`prefix,credits_per_segment\n${'+44,3\n'.repeat(MAX_RATE_CSV_BYTES / 6 + 10)}`));
    assert.equal(big.statusCode, 413);
    assert.equal((await ops.get('/operator/rate-cards/silver')).statusCode, 404);
  });
});
