import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseReceipt, parseReceiptDate, parseReceiptText, receiptOutcome } from './receipt.ts';

describe('receipt text', () => {
  test('the SMPP 3.4 appendix B format, dates with seconds', () => {
    const r = parseReceiptText('id:0A1B2C sub:001 dlvrd:001 submit date:2603011200 done date:260301120530 stat:DELIVRD err:000 text:hello wor');
    assert.deepEqual(r, { id: '0A1B2C', stat: 'DELIVRD', err: '000', doneAt: Date.UTC(2026, 2, 1, 12, 5, 30) });
  });

  test('dates without seconds, upper-case field names, long state names', () => {
    const r = parseReceiptText('ID:12345 SUB:001 DLVRD:000 SUBMIT DATE:2603011200 DONE DATE:2603011201 STAT:UNDELIVERABLE ERR:034 TEXT:');
    assert.deepEqual(r, { id: '12345', stat: 'UNDELIV', err: '034', doneAt: Date.UTC(2026, 2, 1, 12, 1) });
  });

  test('missing id or state is not a receipt; a bad date is ignored', () => {
    assert.equal(parseReceiptText('sub:001 stat:DELIVRD'), null);
    assert.equal(parseReceiptText('id:1 sub:001'), null);
    assert.equal(parseReceiptText('id:1 done date:2613991299 stat:DELIVRD')!.doneAt, null);
    assert.equal(parseReceiptDate('2602300000'), null, '30 February');
  });
});

describe('receipt TLVs', () => {
  test('TLVs win over the text and carry the network error code', () => {
    const r = parseReceipt({ text: 'id:999 stat:DELIVRD err:000', receiptedMessageId: 'ABC', messageState: 3, networkErrorCode: Uint8Array.from([3, 0, 27]) });
    assert.deepEqual(r, { id: 'ABC', stat: 'EXPIRED', err: '027', doneAt: null });
  });

  test('TLVs alone are enough; text alone is enough; neither is null', () => {
    assert.deepEqual(parseReceipt({ text: null, receiptedMessageId: '7', messageState: 2 }), { id: '7', stat: 'DELIVRD', err: '', doneAt: null });
    assert.equal(parseReceipt({ text: 'id:7 stat:ACCEPTD' })!.stat, 'ACCEPTD');
    assert.equal(parseReceipt({ text: '' }), null);
  });
});

describe('receipt states', () => {
  test('DELIVRD is delivered; ACCEPTD, ENROUTE and SCHEDULED change nothing', () => {
    assert.deepEqual(receiptOutcome({ stat: 'DELIVRD', err: '000' }), { status: 'delivered' });
    for (const stat of ['ACCEPTD', 'ENROUTE', 'SCHEDULED', 'WHATEVER']) assert.equal(receiptOutcome({ stat, err: '' }), null, stat);
  });

  test('each final failure has its error_code and a human message', () => {
    const expected: Record<string, string> = { UNDELIV: 'undeliverable', REJECTD: 'rejected', EXPIRED: 'expired', DELETED: 'deleted', UNKNOWN: 'unknown' };
    for (const [stat, code] of Object.entries(expected)) {
      const out = receiptOutcome({ stat, err: '000' });
      assert.equal(out?.status, 'failed');
      assert.equal(out.status === 'failed' && out.errorCode, code);
      assert.match(out.status === 'failed' ? out.errorMessage : '', /^The .*carrier.* .+\.$/);
    }
    const withErr = receiptOutcome({ stat: 'UNDELIV', err: '034' });
    assert.match(withErr?.status === 'failed' ? withErr.errorMessage : '', /network error 034/);
  });
});
