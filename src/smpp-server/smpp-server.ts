/**
 * Pigeon as an SMSC (DECISIONS.md §10): the SMPP 3.4 listener customers' systems bind to. Each
 * connection is a `Session` (session.ts); the server holds what sessions of one SMPP user share in
 * this process (the tps bucket, the parts of long messages, the round robin of receipts), watches
 * the users' credentials so that a rotation, a deletion or a suspension ends their binds within
 * two seconds, and refreshes the bind rows that the CLI and the dashboard list.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { TokenBucket } from '../carriers/smpp/token-bucket.ts';
import type { Context } from '../services/context.ts';
import { decideBind, liveBindCount, type BindDecision } from '../services/smpp-access/smpp-users.ts';
import { forgetSmppBind, recordSmppBind, refreshSmppBinds, smppUsersNow } from '../services/smpp-access/smpp-binds.ts';
import { Session, type SessionTimings } from './session.ts';
import { PartsAssembler } from '../services/smpp-access/smpp-parts.ts';
import { MemoryRateLimitStore, type RateLimitStore } from '../services/rate-limit/rate-limit.ts';
import { OutboxPump } from './outbox-pump.ts';

export interface SmppServerOptions extends SessionTimings {
  host: string;
  port: number;
  /** A second listener speaking SMPP inside TLS. */
  tls?: { port: number; cert: Buffer; key: Buffer };
  /** How often credentials are compared and bind rows refreshed (ends binds within 2 s at 1 s). */
  watchMs: number;
  /** Parts of a long message wait this long for the rest. */
  partsTimeoutMs: number;
  /** Receipts and inbound messages wait this long for a receiver bind. */
  queueHours: number;
  /**
   * The accounts' request counters (RATE_LIMIT_MAX per RATE_LIMIT_WINDOW_MS), shared with the
   * HTTP API of the process (and with every process through Redis when configured): a submit_sm
   * is a request like a POST.
   */
  rateLimits?: RateLimitStore;
}

export const DEFAULT_SMPP_SERVER_OPTIONS: Omit<SmppServerOptions, 'host' | 'port'> = {
  bindTimeoutMs: 30_000,
  enquireLinkMs: 30_000,
  responseTimeoutMs: 30_000,
  watchMs: 1_000,
  partsTimeoutMs: 60_000,
  queueHours: 72,
};

/** Connections not (yet) bound from one address, at most. */
/** Which listener an error of `listen` came from (read by src/config/startup-checks.ts). */
export type SmppListener = 'smpp' | 'smpp-tls';

export const MAX_UNBOUND_PER_ADDRESS = 32;

/** The smallest burst a user's bucket allows: the parts of a long message go together. */
const MIN_BURST = 10;

export class SmppServer {
  readonly #server: Server;
  readonly #tlsServer: Server | null;
  readonly sessions = new Set<Session>();
  readonly #buckets = new Map<string, { tps: number; bucket: TokenBucket }>();
  readonly #bindLocks = new Map<string, Promise<unknown>>();
  readonly parts: PartsAssembler;
  readonly rateLimits: RateLimitStore;
  readonly outbox: OutboxPump;
  #watch: NodeJS.Timeout | null = null;
  #watching = false;
  #partsSweptAt = 0;
  #closed = false;

  constructor(
    readonly ctx: Context,
    readonly options: SmppServerOptions,
  ) {
    this.parts = new PartsAssembler(ctx, options.partsTimeoutMs, (systemIds) => {
      for (const id of systemIds) this.outbox.pump(id);
    });
    this.outbox = new OutboxPump(ctx, this, options);
    this.rateLimits = options.rateLimits ?? new MemoryRateLimitStore();
    this.#server = createServer({ noDelay: true }, (socket) => {
      socket.on('error', () => {});
      this.#accept(socket);
    });
    this.#tlsServer = options.tls
      ? createTlsServer({ cert: options.tls.cert, key: options.tls.key, handshakeTimeout: options.bindTimeoutMs }, (socket) => {
          socket.on('error', () => {});
          this.#accept(socket);
        })
      : null;
    // A failed handshake (plain SMPP on the TLS port, a scanner) is the client's problem.
    this.#tlsServer?.on('tlsClientError', (err) => ctx.log.debug({ err }, 'smpp tls handshake failed'));
  }

  #accept(socket: Socket): void {
    if (this.#closed) {
      socket.destroy();
      return;
    }
    // A flood of connections from one address that never bind holds at most this many sockets;
    // bound ones are limited by their users' max_binds.
    const address = socket.remoteAddress ?? '';
    let unbound = 0;
    for (const s of this.sessions) if (!s.bound && s.address === address) unbound++;
    if (unbound >= MAX_UNBOUND_PER_ADDRESS) {
      socket.destroy();
      return;
    }
    const session = new Session(this, socket, this.options);
    this.sessions.add(session);
    socket.once('close', () => {
      this.sessions.delete(session);
      session.closed();
    });
  }

  /**
   * Opens the listeners. A failure to listen (the port taken, a port this user may not use) is
   * the start's to report, in terms of the setting (src/config/startup-checks.ts): it rejects with
   * the error marked with its `listener`, logs nothing, and leaves no listener of this server open.
   */
  async listen(): Promise<number> {
    const listen = (server: Server, port: number, listener: SmppListener) =>
      new Promise<void>((resolve, reject) => {
        const failed = (err: Error) => reject(Object.assign(err, { listener }));
        server.once('error', failed);
        server.listen(port, this.options.host, () => {
          server.off('error', failed);
          // A listening socket's error (after listen) must not take the process down.
          server.on('error', (err) => this.ctx.log.error({ err, listener }, 'smpp server error'));
          resolve();
        });
      });
    await listen(this.#server, this.options.port, 'smpp');
    if (this.#tlsServer && this.options.tls) {
      try {
        await listen(this.#tlsServer, this.options.tls.port, 'smpp-tls');
      } catch (err) {
        this.#server.close();
        throw err;
      }
    }
    this.#watch = setInterval(() => void this.#tick(), this.options.watchMs);
    this.#watch.unref();
    return (this.#server.address() as AddressInfo).port;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  get tlsPort(): number | null {
    return this.#tlsServer ? (this.#tlsServer.address() as AddressInfo).port : null;
  }

  /** Serialises the binds of one user in this process, so `max_binds` holds under a burst of binds. */
  async bind(systemId: string, decide: () => Promise<BindDecision>, record: (d: BindDecision) => Promise<void>): Promise<BindDecision> {
    const before = this.#bindLocks.get(systemId) ?? Promise.resolve();
    const run = before.then(async () => {
      const decision = await decide();
      await record(decision);
      return decision;
    });
    const settled = run.catch(() => undefined);
    this.#bindLocks.set(systemId, settled);
    void settled.then(() => {
      if (this.#bindLocks.get(systemId) === settled) this.#bindLocks.delete(systemId);
    });
    return run;
  }

  decideBind(systemId: string, password: string, address: string): Promise<BindDecision> {
    return decideBind(this.ctx, { systemId, password, address }, (id) => liveBindCount(this.ctx, id));
  }

  async recordBind(session: Session): Promise<void> {
    await recordSmppBind(this.ctx, session.bindRecord());
  }

  async forgetBind(id: string): Promise<void> {
    await forgetSmppBind(this.ctx, id);
  }

  /** Takes one token of the user's bucket; false: over its tps. */
  takeToken(systemId: string, tps: number): boolean {
    let entry = this.#buckets.get(systemId);
    if (!entry || entry.tps !== tps) {
      entry = { tps, bucket: new TokenBucket(tps, Math.max(MIN_BURST, Math.ceil(tps / 10))) };
      this.#buckets.set(systemId, entry);
    }
    return entry.bucket.take(this.ctx.clock());
  }

  boundSessions(systemId?: string): Session[] {
    return [...this.sessions].filter((s) => s.bound && (systemId === undefined || s.user?.system_id === systemId));
  }

  async #tick(): Promise<void> {
    if (this.#watching || this.#closed) return;
    this.#watching = true;
    try {
      const bound = this.boundSessions();
      if (bound.length > 0) {
        const now = await smppUsersNow(this.ctx, bound.map((s) => s.user!.system_id));
        for (const s of bound) {
          const state = now.get(s.user!.system_id);
          if (!state) s.endBind('SMPP user deleted');
          else if (state.password_hash !== s.credential) s.endBind('password rotated');
          else if (state.account_status === 'suspended') s.endBind('account suspended');
        }
        await refreshSmppBinds(
          this.ctx,
          this.boundSessions().map((s) => (s.submits !== s.submitsWritten ? { id: s.bindId, submits: (s.submitsWritten = s.submits) } : { id: s.bindId })),
        );
      }
      // The parts of long messages that never completed, from any process (a dead one's too).
      const now = Date.now();
      if (now - this.#partsSweptAt >= Math.min(5000, this.options.partsTimeoutMs / 2)) {
        this.#partsSweptAt = now;
        await this.parts.sweep();
      }
      await this.outbox.pumpAll();
    } catch (err) {
      this.ctx.log.warn({ err }, 'smpp server: could not check binds');
    } finally {
      this.#watching = false;
    }
  }

  /** Stops listening, unbinds every session (waiting up to a second for the answers), closes. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#watch) clearInterval(this.#watch);
    const closing = [this.#server, this.#tlsServer].filter((x): x is Server => x !== null).map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
    await Promise.all([...this.sessions].map((s) => s.shutdown()));
    await Promise.all(closing);
  }
}
