import { test } from 'node:test';
import assert from 'node:assert/strict';
import { diffCard, entriesOf, parseRateCsv, RateTable, rateCsv, type Price, type RateEntry } from './rate-card.ts';

const price = (prefix: string, credits: number, at = 0): RateEntry => ({ prefix, effectiveFrom: at, kind: 'price', creditsPerSegment: credits });
const blocked = (prefix: string, at = 0): RateEntry => ({ prefix, effectiveFrom: at, kind: 'blocked', creditsPerSegment: null });
const removed = (prefix: string, at: number): RateEntry => ({ prefix, effectiveFrom: at, kind: 'removed', creditsPerSegment: null });

test('lookup: the longest prefix in effect wins; + is the catch-all; none matches: null', () => {
  const t = new RateTable([price('+', 1), price('+44', 3), price('+447', 5), blocked('+4479')]);
  assert.deepEqual(t.lookup('+447700900123', 10), { prefix: '+447', price: 5, effectiveFrom: 0 });
  assert.deepEqual(t.lookup('+447912345678', 10), { prefix: '+4479', price: 'blocked', effectiveFrom: 0 });
  assert.deepEqual(t.lookup('+441632960000', 10), { prefix: '+44', price: 3, effectiveFrom: 0 });
  assert.deepEqual(t.lookup('+15005550006', 10), { prefix: '+', price: 1, effectiveFrom: 0 });
  assert.equal(new RateTable([price('+44', 3)]).lookup('+15005550006', 10), null);
  // A 15-digit number is matched on its whole length.
  assert.equal(new RateTable([price('+123456789012345', 9)]).lookup('+123456789012345', 0)?.price, 9);
});

test('lookup: dated entries take effect at their time; a removal falls back to the shorter prefix', () => {
  const t = new RateTable([price('+', 1), price('+44', 3), price('+44', 4, 100), removed('+44', 200), price('+33', 2, 150)]);
  assert.equal(t.lookup('+447700900123', 99)?.price, 3);
  assert.equal(t.lookup('+447700900123', 100)?.price, 4);
  assert.deepEqual(t.lookup('+447700900123', 200), { prefix: '+', price: 1, effectiveFrom: 0 });
  // Only a future entry: not yet in effect, the catch-all answers.
  assert.equal(t.lookup('+33612345678', 149)?.prefix, '+');
  assert.deepEqual(t.nextChange('+447700900123', 50), { price: 4, effectiveFrom: 100 });
  assert.deepEqual(t.nextChange('+447700900123', 100), { price: 1, effectiveFrom: 200 });
  assert.equal(t.nextChange('+447700900123', 200), null);
  assert.deepEqual(t.nextChange('+33612345678', 0), { price: 2, effectiveFrom: 150 });
  // A change that does not move the price is not a change to report.
  assert.equal(new RateTable([price('+', 1), price('+44', 1, 100)]).nextChange('+447700900123', 0), null);
  assert.deepEqual([...t.inEffectAt(250).keys()], ['+', '+33']);
  assert.deepEqual(t.scheduledAfter(120).map((e) => [e.prefix, e.effectiveFrom]), [['+33', 150], ['+44', 200]]);
});

test('parseRateCsv: header, prices, blocked, blank lines, BOM and CRLF', () => {
  const r = parseRateCsv('\uFEFFprefix,credits_per_segment\r\n+44,3\r\n\r\n"+1","blocked"\r\n+,0\r\n');
  assert.ok(r.ok);
  assert.deepEqual([...r.prices], [['+44', 3], ['+1', 'blocked'], ['+', 0]]);
});

test('parseRateCsv: a bad line is named by its number in the file, the header being line 1', () => {
  const bad = (text: string) => {
    const r = parseRateCsv(text);
    assert.ok(!r.ok, text);
    return [r.line, r.reason];
  };
  assert.equal(bad('prefix,price\n+44,3')[0], 1);
  assert.equal(bad('')[0], 1);
  assert.equal(bad('prefix,credits_per_segment\n+44,3\n\n44,3')[0], 4);
  assert.equal(bad('prefix,credits_per_segment\n+44,3\n+1,-1')[0], 3);
  assert.equal(bad('prefix,credits_per_segment\n+44,1.5')[0], 2);
  assert.equal(bad('prefix,credits_per_segment\n+44,3,4')[0], 2);
  assert.equal(bad('prefix,credits_per_segment\n+1234567890123456,3')[0], 2);
  assert.equal(bad('prefix,credits_per_segment\n+44,99999999')[0], 2);
  assert.deepEqual(bad('prefix,credits_per_segment\n+44,3\n+44,4'), [3, 'prefix +44 is given twice']);
});

test('diffCard: added, raised, lowered, unchanged; removed only with replace; blocked ranks highest', () => {
  const current = new Map<string, Price>([['+', 1], ['+44', 3], ['+33', 2], ['+1', 'blocked'], ['+49', 2]]);
  const incoming = new Map<string, Price>([['+44', 5], ['+33', 1], ['+49', 2], ['+1', 4], ['+353', 'blocked']]);
  const merge = diffCard(current, incoming, false);
  assert.deepEqual(merge, {
    added: [{ prefix: '+353', credits_per_segment: 'blocked' }],
    raised: [{ prefix: '+44', credits_per_segment: 5, previous: 3 }],
    lowered: [
      { prefix: '+1', credits_per_segment: 4, previous: 'blocked' },
      { prefix: '+33', credits_per_segment: 1, previous: 2 },
    ],
    removed: [],
    unchanged: 1,
  });
  const replace = diffCard(current, incoming, true);
  assert.deepEqual(replace.removed, [{ prefix: '+', credits_per_segment: null, previous: 1 }]);
  assert.deepEqual(
    entriesOf(replace, 7).map((e) => [e.prefix, e.kind, e.creditsPerSegment, e.effectiveFrom]),
    [['+353', 'blocked', null, 7], ['+44', 'price', 5, 7], ['+1', 'price', 4, 7], ['+33', 'price', 1, 7], ['+', 'removed', null, 7]],
  );
});

test('rateCsv writes what parseRateCsv reads', () => {
  const text = rateCsv([{ prefix: '+', price: 1 }, { prefix: '+44', price: 'blocked' }]);
  assert.equal(text, 'prefix,credits_per_segment\n+,1\n+44,blocked\n');
  const back = parseRateCsv(text);
  assert.ok(back.ok);
  assert.deepEqual([...back.prices], [['+', 1], ['+44', 'blocked']]);
});
