/**
 * A real Pigeon server for the client's tests: the project's test harness (in-memory store,
 * simulator carrier, test clock) listening on a free port of 127.0.0.1, plus a TCP proxy that
 * can drop a connection after the request went through.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { harness, type Harness } from '../../../test/helpers/harness.ts';

export interface LiveServer {
  h: Harness;
  baseUrl: string;
  close(): Promise<void>;
}

export async function liveServer(env: Record<string, string> = {}): Promise<LiveServer> {
  const h = await harness(env);
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = h.app.server.address() as AddressInfo;
  return { h, baseUrl: `http://127.0.0.1:${port}`, close: () => h.close() };
}

export interface DroppingProxy {
  baseUrl: string;
  /** The raw request head of every connection, in order. */
  requests: string[];
  close(): Promise<void>;
}

/**
 * Forwards connections to `target`. On the first connection it passes the request on, waits for
 * the server's first response bytes (so the server has finished the request), then destroys the
 * client's socket without passing them: the client never sees the answer. Later connections are
 * piped both ways.
 */
export async function droppingProxy(target: string): Promise<DroppingProxy> {
  const { hostname, port } = new URL(target);
  const requests: string[] = [];
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const server = net.createServer((client) => {
    const drop = connections++ === 0;
    const upstream = net.connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    let head = '';
    client.on('data', (chunk: Buffer) => {
      if (head === '') requests.push((head = chunk.toString('latin1')));
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (drop) {
        client.destroy();
        upstream.destroy();
      } else client.write(chunk);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('error', () => {});
    upstream.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: proxyPort } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${proxyPort}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
