import { test } from 'node:test';
import assert from 'node:assert/strict';
import { segmentMessage, splitIntoParts, type Encoding } from './segmentation.ts';

const BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
const EXTENSION = '\f^{}\\[]~|€';
const EMOJI = '😀';
const UCS = 'ç'; // one UTF-16 unit, outside GSM-7

function seg(text: string): { encoding: Encoding; segments: number; units: number } {
  return segmentMessage(text);
}

function partUnits(part: string, encoding: Encoding): number {
  return encoding === 'UCS-2' ? part.length : Array.from(part, (c) => (EXTENSION.includes(c) ? 2 : 1)).reduce((a, b) => a + b, 0);
}

test('the basic table has all 127 characters and each is one GSM-7 septet', () => {
  assert.equal(Array.from(BASIC).length, 127);
  for (const c of BASIC) assert.deepEqual(seg(c), { encoding: 'GSM-7', segments: 1, units: 1 }, JSON.stringify(c));
  assert.deepEqual(seg(BASIC), { encoding: 'GSM-7', segments: 1, units: 127 });
});

test('every extension character is GSM-7 and costs two septets', () => {
  for (const c of EXTENSION) assert.deepEqual(seg(c), { encoding: 'GSM-7', segments: 1, units: 2 }, JSON.stringify(c));
  assert.equal(seg(`a${EXTENSION}b`).units, 2 + 2 * EXTENSION.length);
});

test('no other BMP code point is GSM-7', () => {
  const gsm = new Set([...BASIC, ...EXTENSION]);
  for (let cp = 0; cp <= 0xffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCharCode(cp);
    assert.equal(seg(c).encoding, gsm.has(c) ? 'GSM-7' : 'UCS-2', `U+${cp.toString(16)}`);
  }
});

test('characters outside GSM-7 switch the whole message to UCS-2', () => {
  for (const c of ['ç', '`', '“', '”', '’', 'م', '中', '\u2126' /* OHM SIGN, not Greek Omega */, '\u00b5' /* MICRO SIGN */, 'ı', '\t', '\u00a0', 'ÿ', 'Ё', '\u0000']) {
    const text = `hello ${c} world`;
    assert.deepEqual(seg(text), { encoding: 'UCS-2', segments: 1, units: text.length }, JSON.stringify(c));
  }
  // Uppercase Ç is GSM-7 (0x09); lowercase ç is not.
  assert.equal(seg('Ç').encoding, 'GSM-7');
  assert.equal(seg('ç').encoding, 'UCS-2');
  // In UCS-2, extension characters are ordinary one-unit characters.
  assert.deepEqual(seg(`ç€`), { encoding: 'UCS-2', segments: 1, units: 2 });
});

test('empty text is one segment of zero units', () => {
  assert.deepEqual(seg(''), { encoding: 'GSM-7', segments: 1, units: 0 });
  assert.deepEqual(splitIntoParts(''), { encoding: 'GSM-7', parts: [''] });
});

test('GSM-7 boundaries: 160/161, 306/307, 459/460', () => {
  const cases: Array<[number, number]> = [[1, 1], [153, 1], [160, 1], [161, 2], [306, 2], [307, 3], [459, 3], [460, 4]];
  for (const [n, segments] of cases) {
    assert.deepEqual(seg('a'.repeat(n)), { encoding: 'GSM-7', segments, units: n }, `${n} chars`);
  }
});

test('UCS-2 boundaries: 70/71, 134/135', () => {
  const cases: Array<[number, number]> = [[1, 1], [67, 1], [70, 1], [71, 2], [134, 2], [135, 3], [201, 3], [202, 4]];
  for (const [n, segments] of cases) {
    assert.deepEqual(seg(UCS.repeat(n)), { encoding: 'UCS-2', segments, units: n }, `${n} units`);
  }
});

test('extension characters count two septets at the single-segment boundary', () => {
  assert.deepEqual(seg('a'.repeat(158) + '€'), { encoding: 'GSM-7', segments: 1, units: 160 });
  assert.deepEqual(seg('a'.repeat(159) + '€'), { encoding: 'GSM-7', segments: 2, units: 161 });
  assert.deepEqual(seg('{'.repeat(80)), { encoding: 'GSM-7', segments: 1, units: 160 });
  assert.deepEqual(seg('{'.repeat(81)), { encoding: 'GSM-7', segments: 2, units: 162 });
});

test('an extension character straddling the 153 boundary moves to the next part', () => {
  const text = 'a'.repeat(152) + '€' + 'b'.repeat(10);
  const { parts } = splitIntoParts(text);
  assert.deepEqual(parts, ['a'.repeat(152), '€' + 'b'.repeat(10)]);
  // 152 + 2 = 154 fits exactly 153 + 1 by arithmetic, but the pair cannot be split.
  const tight = 'a'.repeat(152) + '€' + 'b'.repeat(152);
  assert.equal(seg(tight).units, 306);
  assert.equal(seg(tight).segments, 3);
  assert.deepEqual(splitIntoParts(tight).parts, ['a'.repeat(152), '€' + 'b'.repeat(151), 'b']);
  // Ending exactly at 153 keeps the pair in the first part.
  const exact = 'a'.repeat(151) + '€' + 'b'.repeat(10);
  assert.deepEqual(splitIntoParts(exact).parts, ['a'.repeat(151) + '€', 'b'.repeat(10)]);
});

test('a message of only extension characters holds 76 per part (152 septets)', () => {
  assert.deepEqual(seg('~'.repeat(153)), { encoding: 'GSM-7', segments: 3, units: 306 });
  assert.deepEqual(splitIntoParts('~'.repeat(153)).parts, ['~'.repeat(76), '~'.repeat(76), '~']);
  assert.equal(seg('~'.repeat(152)).segments, 2);
});

test('an emoji counts two UTF-16 units at the 70 boundary', () => {
  assert.deepEqual(seg(EMOJI), { encoding: 'UCS-2', segments: 1, units: 2 });
  assert.deepEqual(seg(UCS.repeat(68) + EMOJI), { encoding: 'UCS-2', segments: 1, units: 70 });
  assert.deepEqual(seg(UCS.repeat(69) + EMOJI), { encoding: 'UCS-2', segments: 2, units: 71 });
  assert.deepEqual(seg(EMOJI.repeat(35)), { encoding: 'UCS-2', segments: 1, units: 70 });
  assert.deepEqual(seg('a'.repeat(68) + EMOJI), { encoding: 'UCS-2', segments: 1, units: 70 });
});

test('an emoji straddling the 67 boundary moves to the next part', () => {
  const text = UCS.repeat(66) + EMOJI + UCS.repeat(10);
  assert.deepEqual(splitIntoParts(text).parts, [UCS.repeat(66), EMOJI + UCS.repeat(10)]);
  const tight = UCS.repeat(66) + EMOJI + UCS.repeat(66);
  assert.deepEqual(seg(tight), { encoding: 'UCS-2', segments: 3, units: 134 });
  assert.deepEqual(splitIntoParts(tight).parts, [UCS.repeat(66), EMOJI + UCS.repeat(65), UCS]);
  const exact = UCS.repeat(65) + EMOJI + UCS.repeat(10);
  assert.deepEqual(splitIntoParts(exact).parts, [UCS.repeat(65) + EMOJI, UCS.repeat(10)]);
  // 36 emoji = 72 units; 33 emoji fill a 66-unit part since a 34th would need 68.
  assert.deepEqual(splitIntoParts(EMOJI.repeat(36)).parts, [EMOJI.repeat(33), EMOJI.repeat(3)]);
});

test('a lone surrogate is one UCS-2 unit and never crashes the split', () => {
  assert.deepEqual(seg('\ud83d'), { encoding: 'UCS-2', segments: 1, units: 1 });
  const text = '\ude00'.repeat(71);
  assert.equal(splitIntoParts(text).parts.join(''), text);
  assert.equal(seg(text).segments, 2);
});

test('single-segment messages come back as one untouched part', () => {
  for (const text of ['hi', 'a'.repeat(160), '€'.repeat(80), UCS.repeat(70), EMOJI.repeat(35)]) {
    assert.deepEqual(splitIntoParts(text).parts, [text]);
  }
});

test('multi-part GSM-7 splits at 153 septets', () => {
  const text = 'x'.repeat(400);
  assert.deepEqual(splitIntoParts(text), { encoding: 'GSM-7', parts: ['x'.repeat(153), 'x'.repeat(153), 'x'.repeat(94)] });
});

/** Mulberry32: small, seeded, reproducible. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test('parts always equal segments, rejoin to the text and respect the limits (random strings)', () => {
  const rand = prng(0x5eed);
  const pools = [
    Array.from(BASIC),
    Array.from(EXTENSION),
    [EMOJI, '🇬🇧', '👍🏽', '𝄞'],
    ['ç', 'ñ', 'é', '“', 'م', '中', '`'],
  ];
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  for (let i = 0; i < 5000; i++) {
    // Mostly GSM-only strings so both encodings get exercised across their boundaries.
    const gsmOnly = rand() < 0.5;
    const length = Math.floor(rand() * (gsmOnly ? 520 : 220));
    const extRate = rand() * 0.6;
    let text = '';
    for (let j = 0; j < length; j++) {
      const r = rand();
      if (gsmOnly) text += r < extRate ? pick(pools[1]!) : pick(pools[0]!);
      else text += r < 0.5 ? pick(pools[0]!) : r < 0.7 ? pick(pools[1]!) : r < 0.85 ? pick(pools[2]!) : pick(pools[3]!);
    }
    const counted = segmentMessage(text);
    const split = splitIntoParts(text);
    const label = JSON.stringify(text);
    assert.equal(split.encoding, counted.encoding, label);
    assert.equal(split.parts.length, counted.segments, label);
    assert.equal(split.parts.join(''), text, label);
    const single = counted.encoding === 'GSM-7' ? 160 : 70;
    const multi = counted.encoding === 'GSM-7' ? 153 : 67;
    const total = split.parts.reduce((sum, p) => sum + partUnits(p, counted.encoding), 0);
    assert.equal(total, counted.units, label);
    if (counted.units <= single) assert.equal(counted.segments, 1, label);
    else {
      assert.ok(counted.segments >= Math.ceil(counted.units / multi), label);
      for (const p of split.parts) {
        assert.ok(partUnits(p, counted.encoding) <= multi, label);
        assert.ok(p.length > 0, label);
        assert.ok(!/^[\udc00-\udfff]/.test(p) && !/[\ud800-\udbff]$/.test(p), `surrogate split in ${label}`);
      }
    }
  }
});
