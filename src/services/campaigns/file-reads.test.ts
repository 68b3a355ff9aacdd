import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AppError } from '../../errors/catalogue.ts';
import { abortable, AccountFileReads } from './file-reads.ts';

const settled = async (p: Promise<unknown>) => {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  // One turn of the event loop: every promise that could settle by now has.
  await new Promise(setImmediate);
  return done;
};

test('per account: a newer preview replaces the one in progress, which stops; it runs once the older has left', async () => {
  const reads = new AccountFileReads();
  const older = await reads.enter('acc_1', 'preview');
  const newer = reads.enter('acc_1', 'preview');
  assert.ok(older.signal.aborted);
  assert.equal((older.signal.reason as AppError).code, 'campaign_file_busy');
  assert.equal(await settled(newer), false, 'one read per account: the newer waits for the older to stop');
  // Another account is not held up.
  const other = await reads.enter('acc_2', 'preview');
  older.leave();
  const turn = await newer;
  assert.equal(turn.signal.aborted, false);
  turn.leave();
  other.leave();
  assert.equal(reads.size, 0, 'no account is remembered once idle');
});

test('per account: a waiting preview is replaced too; a send replaces previews and waits behind sends, up to a bound', async () => {
  const reads = new AccountFileReads();
  reads.maxWaitingSends = 2;
  const send = await reads.enter('acc_1', 'send');
  const preview = reads.enter('acc_1', 'preview');
  const secondSend = reads.enter('acc_1', 'send');
  await assert.rejects(preview, (err: AppError) => err.code === 'campaign_file_busy' && /being sent: its preview was stopped/.test(err.message));
  assert.equal(send.signal.aborted, false, 'a send is never replaced');
  const thirdSend = reads.enter('acc_1', 'send');
  await assert.rejects(reads.enter('acc_1', 'send'), (err: AppError) => err.code === 'campaign_file_busy' && /being checked already/.test(err.message));
  send.leave();
  (await secondSend).leave();
  (await thirdSend).leave();
  assert.equal(reads.size, 0);
});

test('abortable: a source that stalls ends with the signal’s reason as soon as it is aborted', async () => {
  const controller = new AbortController();
  const stalled: AsyncIterable<Uint8Array> = {
    [Symbol.asyncIterator]: () => ({ next: () => new Promise<IteratorResult<Uint8Array>>(() => {}) }),
  };
  const reading = (async () => {
    for await (const _ of abortable(stalled, controller.signal));
  })();
  controller.abort(new AppError('campaign_file_busy', 'replaced'));
  await assert.rejects(reading, (err: AppError) => err.code === 'campaign_file_busy');
});
