import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AppError } from '../errors/catalogue.ts';
import { Slots } from './slots.ts';

const busy = () => new AppError('service_unavailable', 'busy');
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

test('slots: at most `concurrency` run and `maxWaiting` wait, the rest are refused at once; a slot passes to the next in line', async () => {
  const slots = new Slots(1, 1, busy);
  const first = await slots.acquire();
  const second = slots.acquire();
  assert.equal(await settled(second), false, 'the second waits');
  await assert.rejects(slots.acquire(), (err: AppError) => err.code === 'service_unavailable');
  first();
  first(); // a second release changes nothing
  const releaseSecond = await second;
  assert.equal(slots.running, 1);
  releaseSecond();
  assert.equal(slots.running, 0);
  assert.equal(slots.peakRunning, 1);
  assert.equal(slots.peakWaiting, 1);
});

test('slots: a wait ends with the signal’s reason when it is aborted, and leaves the queue', async () => {
  const slots = new Slots(1, 1, busy);
  const first = await slots.acquire();
  const controller = new AbortController();
  const waiting = slots.acquire(controller.signal);
  controller.abort(new AppError('campaign_file_busy', 'replaced'));
  await assert.rejects(waiting, (err: AppError) => err.code === 'campaign_file_busy');
  assert.equal(slots.waiting, 0);
  first();
  assert.equal(slots.running, 0, 'nobody was waiting any more: the slot is free');
});

test('slots: run gives the slot back whether the work succeeds or throws', async () => {
  const slots = new Slots(1, 0, busy);
  assert.equal(await slots.run(async () => 'done'), 'done');
  await assert.rejects(slots.run(async () => Promise.reject(new Error('boom'))), /boom/);
  assert.equal(slots.running, 0);
  assert.equal(await slots.run(async () => 2), 2, 'the slot is free again');
});
