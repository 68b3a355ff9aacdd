import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { exponential } from '../domain/retry-policy.ts';
import { waitFor } from '../../test/helpers/wait-for.ts';
import { StoreCondition } from '../store/condition.ts';
import type { Store } from '../store/connect.ts';
import { WorkerLoop, type StepResult } from './worker-loop.ts';

const silent = pino({ level: 'silent' });
// An idle wait no test reaches by itself: anything that happens sooner was a wake-up or `more`.
const LONG = 60_000;

test('steps again at once while there is more, then waits idle until woken', async () => {
  const results: StepResult[] = [
    { done: 3, more: true },
    { done: 3, more: true },
    { done: 1, more: false },
  ];
  let steps = 0;
  const loop = new WorkerLoop({ name: 't', log: silent, idleMs: LONG, step: async () => results[steps++] ?? { done: 0, more: false } });
  loop.start();
  await waitFor(() => steps === 3);
  // Idle now: nothing runs until a wake-up.
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(steps, 3);
  loop.wake();
  await waitFor(() => steps === 4);
  await loop.stop();
  assert.equal(loop.running, false);
});

test('a failed step is logged and retried after the back-off of the retry policy, then the loop goes on', async () => {
  const errors: unknown[] = [];
  const log = pino({ level: 'error' }, { write: (line: string) => void errors.push(JSON.parse(line)) });
  let calls = 0;
  const loop = new WorkerLoop({
    name: 'flaky',
    log,
    idleMs: LONG,
    onFailure: exponential({ baseMs: 1, factor: 2, maxMs: 4 }),
    failureMessage: 'flaky step failed',
    step: async () => {
      calls++;
      if (calls <= 3) throw new Error(`boom ${calls}`);
      return { done: 1, more: false };
    },
  });
  loop.start();
  await waitFor(() => calls === 4);
  await loop.stop();
  assert.equal(errors.length, 3);
  assert.deepEqual(
    errors.map((e) => (e as { msg: string; queue: string }).msg + ' ' + (e as { queue: string }).queue),
    ['flaky step failed flaky', 'flaky step failed flaky', 'flaky step failed flaky'],
  );
});

test('a step failed by a store outage is logged at debug only; any other failure at error', async () => {
  const lines: { level: number; msg: string; failure?: string }[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const store = { condition: new StoreCondition() } as unknown as Store;
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  const failures = [refused, refused, new Error('a bug')];
  let calls = 0;
  const loop = new WorkerLoop({
    name: 'q',
    log,
    store,
    idleMs: LONG,
    onFailure: exponential({ baseMs: 1, factor: 1, maxMs: 1 }),
    step: async () => {
      const failure = failures[calls++];
      if (failure) throw failure;
      return { done: 1, more: false };
    },
  });
  loop.start();
  await waitFor(() => calls === 4);
  await loop.stop();
  assert.deepEqual(
    lines.map((l) => [l.level, l.failure ?? null]),
    [
      [20, 'unreachable'],
      [20, 'unreachable'],
      [50, null],
    ],
  );
});

test('stop() lets the step in hand finish and ends the idle wait at once', async () => {
  let release!: () => void;
  let finished = false;
  const loop = new WorkerLoop({
    name: 't',
    log: silent,
    idleMs: LONG,
    step: async () => {
      await new Promise<void>((resolve) => (release = resolve));
      finished = true;
      return { done: 1, more: false };
    },
  });
  loop.start();
  await waitFor(() => release !== undefined);
  const stopped = loop.stop();
  release();
  await stopped;
  assert.equal(finished, true);
});

test('startIdle waits before the first step; drain() steps until one handles nothing', async () => {
  let steps = 0;
  const loop = new WorkerLoop({ name: 't', log: silent, idleMs: LONG, startIdle: true, holdsProcess: false, step: async () => ({ done: steps++ < 2 ? 5 : 0, more: false }) });
  loop.start();
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(steps, 0, 'no step before the first idle wait');
  assert.equal(await loop.drain(), 10);
  assert.equal(steps, 3);
  await loop.stop();
});

test('a step that knows when its next item is due cuts the idle wait to it', async () => {
  // The idle wait alone would never come back within the test: only nextInMs brings the next steps.
  const results: StepResult[] = [
    { done: 0, more: false, nextInMs: 5 },
    { done: 0, more: false, nextInMs: 0 },
    { done: 1, more: false, nextInMs: LONG * 10 },
  ];
  let steps = 0;
  const loop = new WorkerLoop({ name: 't', log: silent, idleMs: LONG, step: async () => results[steps++] ?? { done: 0, more: false } });
  loop.start();
  try {
    await waitFor(() => steps === 3, { timeout: 5000 });
    // A due time beyond the idle wait: the idle wait, so nothing runs until a wake-up.
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(steps, 3);
  } finally {
    await loop.stop();
  }
});

test('after a wake-up the loop lingers, so that what is committed meanwhile joins one step; a full batch and resume() do not wait', async () => {
  // Work items committed by "other code": the step takes all of them, up to 10.
  let pending = 0;
  const taken: number[] = [];
  const loop = new WorkerLoop({
    name: 'linger',
    log: silent,
    idleMs: LONG,
    lingerMs: 500,
    startIdle: true,
    step: async () => {
      const n = Math.min(10, pending);
      pending -= n;
      taken.push(n);
      return { done: n, more: n === 10 };
    },
  });
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  loop.start();
  try {
    // Three sends a few milliseconds apart, each waking the loop: one step takes all three (the
    // linger is long, so that a slow machine's late timers still land inside it).
    for (let i = 0; i < 3; i++) {
      pending++;
      loop.wake();
      await sleep(5);
    }
    await waitFor(() => taken.length === 1);
    assert.deepEqual(taken, [3]);
    // The same once the loop has stepped and gone idle.
    for (let i = 0; i < 2; i++) {
      pending++;
      loop.wake();
      await sleep(5);
    }
    await waitFor(() => taken.length === 2);
    assert.deepEqual(taken, [3, 2]);
    // 25 at once: full batches follow each other without a linger between them, the rest after.
    pending = 25;
    loop.wake();
    await waitFor(() => taken.length === 5);
    assert.deepEqual(taken, [3, 2, 10, 10, 5]);
    // resume() (the loop's own results recorded) steps at once: the item added 5 ms after it is
    // left for a later step, where a linger would have taken both.
    pending = 1;
    loop.resume();
    await sleep(5);
    pending++;
    await waitFor(() => taken.length === 6);
    assert.deepEqual(taken, [3, 2, 10, 10, 5, 1]);
  } finally {
    await loop.stop();
  }
});
