import { test } from 'node:test';
import assert from 'node:assert/strict';
import { segmentMessage } from '../../domain/segmentation.ts';
import { decodeGsm7, decodeUcs2, encodeGsm7, encodeGsm7Replacing } from './gsm7.ts';
import { buildSubmitParts, relativeValidity, sourceAddress } from './submit-parts.ts';

const to = { recipient: '+447911123456', sender: 'Acme' };

test('GSM-7 round trip, extension characters as ESC pairs', () => {
  const text = 'Hello @£$ {x} [y] ~|^ €5 \\ ÄÖÑÜ';
  const bytes = encodeGsm7(text);
  assert.equal(bytes[0], 0x48);
  assert.equal(decodeGsm7(bytes), text);
  assert.deepEqual([...encodeGsm7('€')], [0x1b, 0x65]);
  assert.throws(() => encodeGsm7('😀'));
});

test('GSM-7 with replacement: what GSM cannot say becomes "?" (or the replacement given), the rest as encodeGsm7 writes it', () => {
  assert.equal(decodeGsm7(encodeGsm7Replacing('id:msg_1 stat:DELIVRD text:Grüße 😀 ✓ [€]')), 'id:msg_1 stat:DELIVRD text:Grüße ? ? [€]');
  assert.deepEqual(encodeGsm7Replacing('a€b'), encodeGsm7('a€b'));
  assert.deepEqual([...encodeGsm7Replacing('✓', '€')], [0x1b, 0x65]);
  assert.equal(encodeGsm7Replacing('').length, 0);
  assert.equal(decodeGsm7(encodeGsm7Replacing('😀'.repeat(100))), '?'.repeat(100));
});

test('one GSM part: data_coding 0, no UDH, registered delivery, E.164 without the plus', () => {
  const [part, ...rest] = buildSubmitParts({ ...to, body: 'hello' }, 7);
  assert.equal(rest.length, 0);
  assert.equal(part!.data_coding, 0);
  assert.equal(part!.esm_class, 0);
  assert.equal(part!.registered_delivery, 1);
  assert.equal(part!.destination_addr, '447911123456');
  assert.deepEqual([part!.source_addr_ton, part!.source_addr], [5, 'Acme']);
  assert.equal(decodeGsm7(part!.short_message), 'hello');
});

test('three GSM parts: as many as charged, UDH 05 00 03 ref 03 seq, esm_class 0x40, text reassembles', () => {
  const body = 'x'.repeat(400);
  assert.equal(segmentMessage(body).segments, 3);
  const parts = buildSubmitParts({ ...to, body }, 300);
  assert.equal(parts.length, 3);
  parts.forEach((p, i) => {
    assert.equal(p.esm_class, 0x40);
    assert.equal(p.data_coding, 0);
    assert.deepEqual([...p.short_message.subarray(0, 6)], [5, 0, 3, 300 & 0xff, 3, i + 1]);
  });
  assert.equal(parts.map((p) => decodeGsm7(p.short_message.subarray(6))).join(''), body);
  assert.equal(parts[0]!.short_message.length, 6 + 153);
});

test('UCS-2: data_coding 8, UTF-16BE, surrogate pairs kept whole across parts', () => {
  const single = buildSubmitParts({ ...to, body: 'Привет' }, 0);
  assert.equal(single[0]!.data_coding, 8);
  assert.equal(decodeUcs2(single[0]!.short_message), 'Привет');
  const body = 'a'.repeat(66) + '😀' + 'b'.repeat(10);
  const parts = buildSubmitParts({ ...to, body }, 1);
  assert.equal(parts.length, segmentMessage(body).segments);
  assert.equal(parts.map((p) => decodeUcs2(p.short_message.subarray(6))).join(''), body);
});

test('source address TON/NPI', () => {
  assert.deepEqual(sourceAddress('+447700900123'), { ton: 1, npi: 1, addr: '447700900123' });
  assert.deepEqual(sourceAddress('12345'), { ton: 3, npi: 0, addr: '12345' });
  assert.deepEqual(sourceAddress('Acme Ltd'), { ton: 5, npi: 0, addr: 'Acme Ltd' });
});

test('a validity period goes on every part as SMPP relative time (what is left of it); none without one', () => {
  assert.equal(relativeValidity(60), '000000000100000R');
  assert.equal(relativeValidity(259_200), '000003000000000R');
  assert.equal(relativeValidity(90_061), '000001010101000R');
  assert.equal(relativeValidity(0.2), '000000000001000R', 'at least a second');
  const now = 1_800_000_000_000;
  const parts = buildSubmitParts({ ...to, body: 'x'.repeat(200), validUntil: now + 3_600_500 }, 1, now);
  assert.deepEqual(parts.map((p) => p.validity_period), ['000000010000000R', '000000010000000R']);
  assert.equal(buildSubmitParts({ ...to, body: 'hello' }, 1, now)[0]!.validity_period, undefined);
});
