import { test } from 'node:test';
import assert from 'node:assert/strict';
import { iso } from './ids.ts';

test('iso formats exactly as Date#toISOString, across seconds, years and the edges', () => {
  const samples = [0, 1, 999, 1000, 1001, 59_999, 86_399_999, 951_782_400_000, 1_700_000_000_123, 4_102_444_800_000, 253_402_300_799_999, 253_402_300_800_000, -1, -1000, 1.5];
  for (let i = 0; i < 100_000; i++) samples.push(Math.floor(Math.random() * 4_102_444_800_000));
  // Runs of close timestamps, in and out of order, as a page of reports has them.
  let t = 1_763_700_000_000;
  for (let i = 0; i < 10_000; i++) samples.push((t += Math.floor(Math.random() * 700) - 200));
  for (const ms of samples) assert.equal(iso(ms), new Date(ms).toISOString(), String(ms));
  assert.equal(iso(null), null);
});
