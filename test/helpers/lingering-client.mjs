// The clients of test/security/lingering-close.test.ts, run in a process of their own: in the
// server's process, the client's writes and the server's reads share one event loop and the
// reset the test is about does not happen. Usage: node lingering-client.mjs URL AUTHORIZATION ROUNDS PARALLEL
import { request as httpRequest } from 'node:http';

const [url, authorization, rounds, parallel] = process.argv.slice(2);
/** Over the 5 MiB default limit, and far more than the socket buffers hold while nothing reads. */
const BODY = Buffer.alloc(6 * 1024 * 1024, 'x');

async function withFetch() {
  try {
    const res = await fetch(url, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: BODY, signal: AbortSignal.timeout(30_000) });
    return `${res.status} ${(await res.json()).code}`;
  } catch (err) {
    return `error ${err.cause?.code ?? err}`;
  }
}

function withHttpRequest() {
  return new Promise((resolve) => {
    const req = httpRequest(url, { method: 'POST', headers: { authorization, 'content-type': 'application/json', 'content-length': BODY.length }, timeout: 30_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve(`${res.statusCode} ${JSON.parse(text).code}`));
      res.on('error', (err) => resolve(`error ${err.code ?? err}`));
    });
    req.on('error', (err) => resolve(`error ${err.code ?? err}`));
    req.end(BODY);
  });
}

const answers = { fetch: [], request: [], parallel: [] };
// One after another, as a client retries, each on a connection of its own; then some at once.
for (let i = 0; i < Number(rounds); i++) answers.fetch.push(await withFetch());
for (let i = 0; i < Number(rounds); i++) answers.request.push(await withHttpRequest());
answers.parallel = await Promise.all(Array.from({ length: Number(parallel) }, (_, i) => (i % 2 ? withFetch() : withHttpRequest())));
process.stdout.write(JSON.stringify(answers));
