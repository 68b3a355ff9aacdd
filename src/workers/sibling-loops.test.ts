/**
 * The loops of one queue (`loops` in workers.ts): when the queue is idle only the first polls at
 * the queue's interval, the others at SIBLING_IDLE_MS; a full batch claimed by any of them, or
 * work committed in the process, sets them all going at once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { waitFor } from '../../test/helpers/wait-for.ts';
import { StoreCondition } from '../store/condition.ts';
import type { Store } from '../store/connect.ts';
import { QueueWorker } from './queue-worker.ts';
import { loops, SIBLING_IDLE_MS } from './workers.ts';

const silent = pino({ level: 'silent' });
const store = { condition: new StoreCondition() } as unknown as Store;
const BATCH = 10;

test('idle, the first loop of a queue polls at its interval and the others seldom; a full batch or a wake-up sets them all going', async () => {
  const calls = [0, 0, 0];
  // How many full batches the queue has left to give; then nothing.
  let backlog = 0;
  let made = 0;
  const queue = loops(3, (role) => {
    const index = made++;
    return new QueueWorker({
      store,
      clock: Date.now,
      log: silent,
      queue: 'receipt',
      batchSize: BATCH,
      leaseMs: 1000,
      idleMs: role.idleMs(20),
      onFull: role.onFull,
      handle: async () => {},
      claimAndHandle: async () => {
        calls[index]!++;
        if (backlog === 0) return 0;
        backlog--;
        // A batch takes a while: the others get theirs meanwhile.
        await new Promise((resolve) => setTimeout(resolve, 20));
        return BATCH;
      },
    });
  });
  queue.start();
  try {
    await new Promise((resolve) => setTimeout(resolve, 400));
    // Each started with one step; since then only the first has polled.
    assert.ok(calls[0]! >= 3, `the first loop polled ${calls[0]} times in 400 ms`);
    assert.deepEqual(calls.slice(1), [1, 1], `the others waited their ${SIBLING_IDLE_MS} ms`);

    // A backlog: the first claims a full batch and the others join before their interval.
    const before = [...calls];
    backlog = 6;
    await waitFor(() => backlog === 0, { timeout: 10_000, interval: 5, message: 'the backlog taken' });
    assert.ok(calls[1]! > before[1]! && calls[2]! > before[2]!, `every loop claimed: ${before} then ${calls}`);

    // A wake-up (work committed in this process) reaches them all too.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const idle = [...calls];
    queue.wake();
    await waitFor(() => calls[1]! > idle[1]! && calls[2]! > idle[2]!, { timeout: 800, interval: 5, message: 'all woken before their own interval' });
  } finally {
    await queue.stop();
  }
});
