/**
 * A real HTTPS webhook receiver on 127.0.0.1 for the webhook tests and benchmark, with a test CA
 * made by the `openssl` command at run time (nothing secret is committed).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCa {
  dir: string;
  /** PEM of the CA, for `ca` options or NODE_EXTRA_CA_CERTS (`caFile`). */
  ca: string;
  caFile: string;
  key: string;
  cert: string;
  cleanup(): void;
}

/** A CA and a server certificate for localhost and 127.0.0.1, valid for a day. */
export function makeTestCa(): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-ca-'));
  const p = (name: string) => join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const run = (args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  run(['req', '-x509', ...ec, '-keyout', p('ca.key'), '-out', p('ca.crt'), '-days', '1', '-subj', '/CN=Pigeon Test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  run(['req', ...ec, '-keyout', p('server.key'), '-out', p('server.csr'), '-subj', '/CN=localhost']);
  writeFileSync(p('ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  run(['x509', '-req', '-in', p('server.csr'), '-CA', p('ca.crt'), '-CAkey', p('ca.key'), '-CAcreateserial', '-out', p('server.crt'), '-days', '1', '-extfile', p('ext.cnf')]);
  return {
    dir,
    ca: readFileSync(p('ca.crt'), 'utf8'),
    caFile: p('ca.crt'),
    key: readFileSync(p('server.key'), 'utf8'),
    cert: readFileSync(p('server.crt'), 'utf8'),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  at: number;
  /** When the receiver answered (or gave up on) the request. */
  doneAt: number;
}

/** What to do with a request: answer with a status (after an optional delay), hang, or drop the connection. */
export type Behaviour = { status: number; delayMs?: number; headers?: Record<string, string>; body?: string } | 'hang' | 'close';

export interface Receiver {
  port: number;
  url(path: string): string;
  received: Received[];
  /** Highest number of requests open at once, per path prefix (first segment). */
  maxOpen: Map<string, number>;
  close(): Promise<void>;
}

/**
 * Starts a receiver; `behave` picks the behaviour from the request path and how many requests
 * that path has had before (0 for the first).
 */
export async function startReceiver(tls: { key: string; cert: string }, behave: (path: string, seen: number) => Behaviour): Promise<Receiver> {
  const received: Received[] = [];
  const seen = new Map<string, number>();
  const open = new Map<string, number>();
  const maxOpen = new Map<string, number>();
  const server = https.createServer({ key: tls.key, cert: tls.cert, keepAliveTimeout: 5000 }, (req, res) => {
    const path = req.url ?? '/';
    const group = path.split('/')[1] ?? '';
    const chunks: Buffer[] = [];
    const at = Date.now();
    open.set(group, (open.get(group) ?? 0) + 1);
    maxOpen.set(group, Math.max(maxOpen.get(group) ?? 0, open.get(group)!));
    let closed = false;
    const done = () => {
      if (closed) return;
      closed = true;
      open.set(group, open.get(group)! - 1);
    };
    res.on('close', done);
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const n = seen.get(path) ?? 0;
      seen.set(path, n + 1);
      const entry: Received = { path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at, doneAt: 0 };
      received.push(entry);
      const b = behave(path, n);
      if (b === 'hang') return;
      if (b === 'close') {
        entry.doneAt = Date.now();
        req.socket.destroy();
        return;
      }
      const answer = () => {
        entry.doneAt = Date.now();
        res.writeHead(b.status, b.headers ?? {}).end(b.body ?? 'ok');
      };
      if (b.delayMs) setTimeout(answer, b.delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path) => `https://127.0.0.1:${port}${path}`,
    received,
    maxOpen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
