/**
 * Pigeon's SMPP listener in this process for the server-*.test.ts files: the in-process harness
 * (its store, its clock, its simulator and workers), a listener on 127.0.0.1 with short session
 * timings, SMPP users made through the service, and ESMEs: the `smpp` package's client, and raw
 * sockets for what no well-behaved client sends.
 */
import { connect as netConnect, type Socket } from 'node:net';
import smpp, { type PDU, type Session } from 'smpp';
import { harness, type Harness } from '../helpers/harness.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { SmppServer, DEFAULT_SMPP_SERVER_OPTIONS, type SmppServerOptions } from '../../src/smpp-server/smpp-server.ts';
import { createSmppUser, type SmppUserWithPassword } from '../../src/services/smpp-access/smpp-users.ts';

export interface ServerFixture {
  h: Harness;
  server: SmppServer;
  port: number;
  /** A customer (100 credits, approved Sender ID `Acme`) with an SMPP user. */
  user(opts?: { systemId?: string; tps?: number; maxBinds?: number; allow?: string[]; accountId?: string; credits?: number }): Promise<SmppUserWithPassword & { key: string }>;
  close(): Promise<void>;
}

let users = 0;

export async function serverFixture(env: Record<string, string> = {}, timings: Partial<SmppServerOptions> = {}): Promise<ServerFixture> {
  const h = await harness(env);
  const server = new SmppServer(h.ctx, {
    ...DEFAULT_SMPP_SERVER_OPTIONS,
    host: '127.0.0.1',
    port: 0,
    bindTimeoutMs: 800,
    enquireLinkMs: 150,
    responseTimeoutMs: 300,
    watchMs: 50,
    partsTimeoutMs: 400,
    ...timings,
  });
  const port = await server.listen();
  return {
    h,
    server,
    port,
    async user(opts = {}) {
      users++;
      const customer = opts.accountId ? { accountId: opts.accountId, key: '' } : await h.customer({ credits: opts.credits ?? 100 });
      const accountId = customer.accountId;
      const made = await createSmppUser(h.ctx, accountId, {
        systemId: opts.systemId ?? `user${users}`,
        ...(opts.tps !== undefined ? { tps: opts.tps } : {}),
        ...(opts.maxBinds !== undefined ? { maxBinds: opts.maxBinds } : {}),
        ...(opts.allow !== undefined ? { allow: opts.allow } : {}),
      });
      return { ...made, key: customer.key };
    },
    async close() {
      await server.close();
      await h.close();
    },
  };
}

/** An ESME: the `smpp` package's client, connected (from `localAddress` when given, in 127.0.0.0/8). */
export async function esme(port: number, localAddress?: string): Promise<Session> {
  const session = smpp.connect({ host: '127.0.0.1', port, ...(localAddress ? { localAddress } : {}) });
  session.on('error', () => {});
  // As every ESME does; a test that wants silence uses a raw socket.
  session.on('enquire_link', (pdu: PDU) => session.send(pdu.response()));
  await new Promise<void>((resolve, reject) => {
    session.once('connect', () => resolve());
    session.once('error', reject);
  });
  return session;
}

/** Sends a request and resolves with its answer. */
export function call(session: Session, command: string, fields: Record<string, unknown> = {}): Promise<PDU> {
  return new Promise((resolve, reject) => {
    const sent = (session as unknown as Record<string, (o: Record<string, unknown>, cb: (pdu: PDU) => void) => boolean>)[command]!.call(session, fields, resolve);
    if (!sent) reject(new Error(`${command} not sent: the socket is not writable`));
  });
}

/**
 * A bound ESME. `prepare` runs before the bind: what the server sends may come in the bind
 * answer's packet, before the caller's next line runs.
 */
export async function bound(
  port: number,
  user: { system_id: string; password: string },
  type = 'bind_transceiver',
  localAddress?: string,
  prepare?: (session: Session) => void,
): Promise<Session> {
  const session = await esme(port, localAddress);
  prepare?.(session);
  const answer = await call(session, type, { system_id: user.system_id, password: user.password });
  if (answer.command_status !== 0) throw new Error(`${type} answered 0x${answer.command_status.toString(16)}`);
  return session;
}

export function closed(session: Session | Socket): Promise<void> {
  const socket = 'socket' in session ? session.socket : session;
  if (socket.destroyed || socket.closed) return Promise.resolve();
  return new Promise((resolve) => socket.once('close', () => resolve()));
}

/** A raw connection that records every byte the server sends. */
export interface RawClient {
  socket: Socket;
  received(): Buffer;
  /** The PDUs received so far: command id, status, sequence. */
  pdus(): { id: number; status: number; seq: number; body: Buffer }[];
  closed: Promise<void>;
}

export async function raw(port: number, localAddress?: string): Promise<RawClient> {
  const socket = netConnect({ host: '127.0.0.1', port, ...(localAddress ? { localAddress } : {}) });
  socket.on('error', () => {});
  let bytes = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => (bytes = Buffer.concat([bytes, chunk])));
  const isClosed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  return {
    socket,
    received: () => bytes,
    pdus() {
      const out = [];
      let at = 0;
      while (at + 16 <= bytes.length) {
        const length = bytes.readUInt32BE(at);
        if (length < 16 || at + length > bytes.length) break;
        out.push({ id: bytes.readUInt32BE(at + 4), status: bytes.readUInt32BE(at + 8), seq: bytes.readUInt32BE(at + 12), body: bytes.subarray(at + 16, at + length) });
        at += length;
      }
      return out;
    },
    closed: isClosed,
  };
}

/** A PDU's bytes as the `smpp` package writes them. */
export function pduBytes(command: string, fields: Record<string, unknown> = {}): Buffer {
  return (new smpp.PDU(command, fields) as unknown as { toBuffer(): Buffer }).toBuffer();
}

export function header(length: number, id: number, status: number, seq: number): Buffer {
  const b = Buffer.alloc(16);
  b.writeUInt32BE(length, 0);
  b.writeUInt32BE(id >>> 0, 4);
  b.writeUInt32BE(status, 8);
  b.writeUInt32BE(seq, 12);
  return b;
}

export { waitFor };
