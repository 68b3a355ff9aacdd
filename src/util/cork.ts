import type { Writable } from 'node:stream';

const corked = new WeakSet<Writable>();

/**
 * Holds what is written to `stream` until the current run of callbacks ends (the next tick), once
 * per run however often it is called: PDUs that are ready together (a batch's answers, the submits
 * of one pass) then leave in one write, where each would be a system call of its own.
 */
export function corkForTurn(stream: Writable): void {
  if (corked.has(stream)) return;
  corked.add(stream);
  stream.cork();
  process.nextTick(() => {
    corked.delete(stream);
    stream.uncork();
  });
}
