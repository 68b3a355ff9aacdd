/**
 * A TCP forwarder on 127.0.0.1 standing where an operator's failover address stands (a virtual
 * IP, HAProxy, PgBouncer, a DNS name moved to the new primary): clients keep one address while
 * the test moves the server behind it. Moving it cuts every open connection, as a failover does.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Sends new connections to `port` and resets the open ones. */
  switchTo(port: number): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  let target = targetPort;
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: target });
    for (const s of [client, upstream]) {
      open.add(s);
      s.once('close', () => open.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    switchTo(next) {
      target = next;
      for (const s of open) s.resetAndDestroy();
    },
    close() {
      for (const s of open) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
