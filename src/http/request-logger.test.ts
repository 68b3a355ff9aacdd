import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { requestLogger } from './request-logger.ts';
import { buildApp } from './app.ts';
import { openTestStore, serviceContext } from '../../test/helpers/test-store.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, stream };
}

test('a request logger builds its child only when something is logged, with the bindings and redaction of a pino child', () => {
  const { lines, stream } = capture();
  const parent = pino({ level: 'info', redact: { paths: ['headers.authorization'], censor: '[redacted]' } }, stream);
  let children = 0;
  const child = parent.child.bind(parent);
  parent.child = ((...args: Parameters<typeof child>) => {
    children++;
    return child(...args);
  }) as typeof parent.child;

  const log = requestLogger(parent, { reqId: 'req-1' }, {});
  assert.equal(log.level, 'info');
  log.debug('below the level');
  assert.equal(lines.length, 0);
  assert.equal(children, 1, 'the first call builds the child, whatever its level');

  const quiet = requestLogger(parent, { reqId: 'req-2' }, {});
  assert.equal(quiet.level, 'info');
  assert.equal(children, 1, 'a logger nobody writes to builds nothing');

  log.error({ headers: { authorization: 'Bearer pk_live_secret' } }, 'failed');
  log.info('again');
  assert.equal(children, 1);
  assert.deepEqual(
    lines.map((l) => [l.reqId, l.msg, (l.headers as { authorization?: string } | undefined)?.authorization]),
    [
      ['req-1', 'failed', '[redacted]'],
      ['req-1', 'again', undefined],
    ],
  );
});

test('an unhandled error is logged with the id of the request it failed', async () => {
  const { lines, stream } = capture();
  const store = await openTestStore();
  const app = await buildApp({ ctx: serviceContext(store), logger: pino({ level: 'info' }, stream) });
  try {
    app.get('/boom', async () => {
      throw new Error('boom');
    });
    const res = await app.inject({ method: 'GET', url: '/boom' });
    assert.equal(res.statusCode, 500);
    const line = lines.find((l) => l.msg === 'unhandled error');
    assert.ok(line, 'the error is logged');
    assert.equal(typeof line.reqId, 'string');
    assert.equal((line.err as { message: string }).message, 'boom');
  } finally {
    await app.close();
    await store.close();
  }
});
