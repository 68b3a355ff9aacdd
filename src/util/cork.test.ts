import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { corkForTurn } from './cork.ts';

/** A stream that records each hand-over to its sink: the chunks of every `_write` or `_writev`. */
function recorder(): { stream: Writable; calls: string[][] } {
  const calls: string[][] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      calls.push([chunk.toString()]);
      done();
    },
    writev(chunks, done) {
      calls.push(chunks.map((c) => String(c.chunk)));
      done();
    },
  });
  return { stream, calls };
}

test('what is written in one run of callbacks is handed over once, however often the stream was corked in it', async () => {
  const { stream, calls } = recorder();
  corkForTurn(stream);
  stream.write('a');
  corkForTurn(stream);
  stream.write('b');
  await Promise.resolve().then(() => stream.write('c'));
  assert.deepEqual(calls, [], 'nothing leaves before the turn ends');
  await nextTurn();
  assert.deepEqual(calls, [['a', 'b', 'c']]);
  assert.equal(stream.writableCorked, 0, 'uncorked as often as corked');

  // The next turn corks afresh.
  corkForTurn(stream);
  stream.write('d');
  stream.write('e');
  await nextTurn();
  assert.deepEqual(calls, [['a', 'b', 'c'], ['d', 'e']]);
});
