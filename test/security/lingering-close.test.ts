/**
 * A client still writing a body over the limit reads the answer that refused it (413, or an early
 * 401) instead of EPIPE or ECONNRESET: after answering, the server goes on reading and discarding
 * the rest of the body, within bounds, before it closes (docs/security.md, "Request bodies").
 * Node's own clients, `fetch` and `http.request`, in a process of their own (test/helpers/lingering-client.mjs),
 * against a real listening server on 127.0.0.1.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createConnection, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import Fastify from 'fastify';
import { installLingeringClose } from '../../src/http/lingering-close.ts';
import { harness, type Harness } from '../helpers/harness.ts';
import { waitFor } from '../helpers/wait-for.ts';

const ROUNDS = 20;
const PARALLEL = 10;

let h: Harness;
let base: string;
let key: string;

before(async () => {
  h = await harness();
  ({ key } = await h.customer());
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});

after(() => h.close());

function clients(authorization: string): Promise<{ fetch: string[]; request: string[]; parallel: string[] }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [join(process.cwd(), 'test/helpers/lingering-client.mjs'), `${base}/v1/sms/bulk`, authorization, String(ROUNDS), String(PARALLEL)],
      { timeout: 120_000 },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout) as { fetch: string[]; request: string[]; parallel: string[] })),
    );
  });
}

describe('over-limit bodies are answered readably', () => {
  test('a valid key: fetch and http.request read the 413 payload_too_large, 20 of 20 each, and 10 at once', async () => {
    const answers = await clients(`Bearer ${key}`);
    assert.deepEqual(answers, { fetch: Array(ROUNDS).fill('413 payload_too_large'), request: Array(ROUNDS).fill('413 payload_too_large'), parallel: Array(PARALLEL).fill('413 payload_too_large') });
  });

  test('a bad key: the 401 is read, 20 of 20 each', async () => {
    const answers = await clients('Bearer pk_live_not_a_key');
    for (const list of [answers.fetch, answers.request, answers.parallel]) assert.ok(list.every((a) => a.startsWith('401 ')), list.join(', '));
  });

  test('a client that never ends its body is closed after the bound, not held', async () => {
    // Half-open, as a client still writing is: the server's FIN after the answer does not close it.
    const socket = createConnection({ host: '127.0.0.1', port: Number(new URL(base).port), allowHalfOpen: true });
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.on('error', () => {});
    let answer = '';
    socket.on('data', (c: Buffer) => (answer += c.toString()));
    const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
    socket.write(`POST /v1/sms/bulk HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${1024 * 1024 * 1024}\r\n\r\n`);
    // A trickle that would go on for ever: the server stops reading after its time bound.
    const started = Date.now();
    const trickle = setInterval(() => socket.write(Buffer.alloc(1024, 'x')), 50);
    try {
      const at = await closed;
      assert.match(answer, /^HTTP\/1\.1 413 /);
      // Held for the time bound (2 s) while the bytes came, then closed.
      assert.ok(at - started >= 1_500 && at - started < 10_000, `closed after ${at - started} ms`);
    } finally {
      clearInterval(trickle);
      socket.destroy();
    }
  });

  test('past the cap on lingering connections, one more is closed after its answer at once', async () => {
    const app = Fastify({ logger: false });
    installLingeringClose(app, { ms: 60_000, bytes: 1024 * 1024 * 1024, connections: 1 });
    app.addHook('onRequest', async (_request, reply) => reply.code(401).send({ code: 'unauthorized' }));
    app.post('/', async () => ({}));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as AddressInfo).port;
    const open = async () => {
      const socket = createConnection({ host: '127.0.0.1', port, allowHalfOpen: true });
      socket.on('error', () => {});
      await new Promise<void>((resolve) => socket.once('connect', resolve));
      let answer = '';
      socket.on('data', (c: Buffer) => (answer += c.toString()));
      let closed = false;
      socket.once('close', () => (closed = true));
      socket.write(`POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n${'x'.repeat(1000)}`);
      return { socket, answer: () => answer, closed: () => closed };
    };
    const first = await open();
    await waitFor(() => first.answer().startsWith('HTTP/1.1 401'));
    const second = await open();
    try {
      await waitFor(() => second.answer().startsWith('HTTP/1.1 401'));
      // More of the body: the lingering connection reads it, the one closed at once resets.
      await waitFor(
        () => {
          for (const c of [first, second]) if (!c.closed()) c.socket.write('x'.repeat(1000));
          return second.closed();
        },
        { message: () => 'the second connection, past the cap, is closed' },
      );
      assert.match(second.answer(), /^HTTP\/1\.1 401 /);
      assert.equal(first.closed(), false, 'the first still lingers, reading');
    } finally {
      first.socket.destroy();
      second.socket.destroy();
      await app.close();
    }
  });
});
