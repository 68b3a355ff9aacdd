/**
 * One SMSC connection: binds as transceiver, keeps the bind alive with enquire_link, rebinds with
 * exponential backoff after a drop or a refused bind, and sends submits through a window of
 * outstanding requests and a TPS cap. Throttling answers (ESME_RTHROTTLED, ESME_RMSGQFUL) pause
 * the whole link and put the submit back at the head of the queue.
 *
 * When the link fails, every answer the SMSC already sent is read before what is still outstanding
 * is handed back, and nothing is written once the SMSC has ended its side: a part it answered must
 * not be submitted again.
 */
import * as smpp from 'smpp';
import type { Logger } from 'pino';
import type { SmppRouteConfig } from '../../config/smpp-config.ts';
import { isTransientStatus } from './smpp-status.ts';
import type { SubmitFields } from './submit-parts.ts';
import { TokenBucket } from './token-bucket.ts';
import { corkForTurn } from '../../util/cork.ts';

export type PartResult =
  /** The SMSC took the part and gave it this id. */
  | { kind: 'ok'; messageId: string }
  /** The SMSC refused the part for good with this command_status. */
  | { kind: 'error'; status: number }
  /**
   * Not sent: the link was down, or throttling outlasted the deadline (`status`: the SMSC's last
   * answer, ESME_RTHROTTLED or ESME_RMSGQFUL). Safe to send again.
   */
  | { kind: 'retry'; reason: string; status?: number }
  /**
   * Written, and the link failed before an answer came: the SMSC may or may not have it (SMPP
   * offers no way to ask).
   */
  | { kind: 'lost'; reason: string };

export interface LinkTimings {
  enquireLinkMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  responseTimeoutMs: number;
  /** How long a submit may wait in the queue (throttled, window full) before it is handed back. */
  queueDeadlineMs: number;
}

export type LinkState = 'idle' | 'connecting' | 'binding' | 'bound' | 'closed';

interface Pending {
  fields: SubmitFields;
  deadline: number;
  resolve: (result: PartResult) => void;
  /** The temporary status the SMSC last answered this submit with. */
  throttledWith?: number;
}

interface Outstanding extends Pending {
  sentAt: number;
}

const THROTTLE_MIN_MS = 50;
const THROTTLE_MAX_MS = 5000;
/** A deliver_sm handler that fails is answered with this: "temporary application error, retry". */
const ESME_RX_T_APPN = 0x64;

export class SmppLink {
  state: LinkState = 'idle';
  /** Why the link is not bound, for the log and /ready. */
  lastError: string | null = null;
  #session: smpp.Session | null = null;
  #queue: Pending[] = [];
  #outstanding = new Map<number, Outstanding>();
  #bucket: TokenBucket | null;
  #reconnectDelay: number;
  #reconnectTimer: NodeJS.Timeout | null = null;
  #nextAttemptAt = 0;
  #keepAlive: NodeJS.Timeout | null = null;
  #pumpTimer: NodeJS.Timeout | null = null;
  #throttledUntil = 0;
  #throttleDelay = THROTTLE_MIN_MS;
  #lastHeard = 0;
  #onBound: (() => void)[] = [];
  #pumpQueued = false;

  constructor(
    public route: SmppRouteConfig,
    private readonly timings: LinkTimings,
    private readonly log: Logger,
    private readonly onDeliverSm: (pdu: smpp.PDU) => Promise<void>,
  ) {
    this.#bucket = route.tps > 0 ? new TokenBucket(route.tps) : null;
    this.#reconnectDelay = timings.reconnectMinMs;
  }

  start(): void {
    if (this.state !== 'idle') return;
    this.#connect();
  }

  /**
   * Takes a route's new prefixes, priority, cost, failover codes, TPS or window without binding
   * again (a change of address or credentials needs a new link instead).
   */
  update(route: SmppRouteConfig): void {
    if (route.tps !== this.route.tps) this.#bucket = route.tps > 0 ? new TokenBucket(route.tps) : null;
    this.route = route;
    this.#pump();
  }

  get bound(): boolean {
    return this.state === 'bound';
  }

  /** Milliseconds until the next bind attempt (0 when bound or trying now). */
  get retryInMs(): number {
    return this.#reconnectTimer ? Math.max(0, this.#nextAttemptAt - Date.now()) : 0;
  }

  /** Submits queued here, waiting for room in the window (or for the throttle). */
  get queued(): number {
    return this.#queue.length;
  }

  /** Submits sent and not yet answered: at most the window. */
  get awaitingResponse(): number {
    return this.#outstanding.size;
  }

  /** Resolves once bound (or at once if already). For tests and the benchmark. */
  whenBound(): Promise<void> {
    if (this.bound) return Promise.resolve();
    return new Promise((resolve) => this.#onBound.push(resolve));
  }

  /** Queues one submit_sm. Never rejects. */
  submit(fields: SubmitFields): Promise<PartResult> {
    if (!this.bound) return Promise.resolve({ kind: 'retry', reason: `link ${this.route.name} is not bound` });
    return new Promise((resolve) => {
      this.#queue.push({ fields, deadline: Date.now() + this.timings.queueDeadlineMs, resolve });
      this.#pump();
    });
  }

  async close(): Promise<void> {
    const previous = this.state;
    this.state = 'closed';
    if (this.#reconnectTimer) clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = null;
    const session = this.#session;
    if (!session) {
      this.#failAll('the connector is shutting down');
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => session.destroy(), 1000);
      session.socket.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
      // Answers still on their way count: the submits are failed once the connection is closed.
      if (previous === 'bound' && !session.socket.readableEnded && session.unbind(() => session.close())) return;
      session.destroy();
    });
  }

  #connect(): void {
    if (this.state === 'closed') return;
    this.#reconnectTimer = null;
    this.state = 'connecting';
    const session = smpp.connect({ host: this.route.host, port: this.route.port });
    // Many small PDUs in flight: Nagle's algorithm with the peer's delayed ACK would stall the window.
    session.socket.setNoDelay(true);
    this.#keepReadingAfterWriteError(session);
    this.#session = session;
    // An SMSC that takes the connection but never answers the bind must not leave us waiting.
    const bindTimer = setTimeout(() => {
      if (this.#session !== session || this.state === 'bound') return;
      this.lastError = `not bound within ${this.timings.responseTimeoutMs} ms`;
      session.destroy();
    }, this.timings.responseTimeoutMs);
    bindTimer.unref();
    session.socket.once('close', () => clearTimeout(bindTimer));
    session.on('connect', () => {
      this.state = 'binding';
      session.bind_transceiver(
        { system_id: this.route.systemId, password: this.route.password, system_type: this.route.systemType, interface_version: 0x34 },
        (pdu) => {
          if (this.#session !== session) return;
          if (pdu.command_status !== 0) {
            this.lastError = `bind refused with status 0x${pdu.command_status.toString(16).padStart(8, '0')}`;
            session.destroy();
            return;
          }
          this.#bound(session);
        },
      );
    });
    session.on('error', (err: Error) => {
      this.lastError = err.message;
    });
    session.on('close', () => this.#closed(session));
    // The SMSC ended its side: nothing more is written (node ends ours), answers still in flight are read.
    session.socket.on('end', () => {
      this.lastError ??= 'the SMSC closed the connection';
      // Everything it sent has been read ('end' comes after the last data): nothing more can come.
      setImmediate(() => session.destroy());
    });
    session.on('deliver_sm', (pdu: smpp.PDU) => this.#deliver(session, pdu));
    session.on('enquire_link', (pdu: smpp.PDU) => {
      this.#lastHeard = Date.now();
      session.send(pdu.response());
    });
    session.on('enquire_link_resp', () => {
      this.#lastHeard = Date.now();
    });
    session.on('unbind', (pdu: smpp.PDU) => {
      this.lastError = 'the SMSC unbound';
      session.send(pdu.response(), () => session.destroy());
    });
    session.on('submit_sm_resp', (pdu: smpp.PDU) => this.#submitResponse(pdu));
    session.on('generic_nack', (pdu: smpp.PDU) => this.#submitResponse(pdu));
  }

  #bound(session: smpp.Session): void {
    this.state = 'bound';
    this.lastError = null;
    this.#reconnectDelay = this.timings.reconnectMinMs;
    this.#lastHeard = Date.now();
    this.log.info({ route: this.route.name, host: this.route.host, port: this.route.port }, 'smpp bound');
    this.#keepAlive = setInterval(() => this.#tick(session), Math.min(this.timings.enquireLinkMs, 1000));
    this.#keepAlive.unref();
    const waiting = this.#onBound;
    this.#onBound = [];
    waiting.forEach((fn) => fn());
    this.#pump();
  }

  /** Keep-alive and response timeouts: a link that stops answering is dropped and rebound. */
  #tick(session: smpp.Session): void {
    const now = Date.now();
    for (const o of this.#outstanding.values()) {
      if (now - o.sentAt > this.timings.responseTimeoutMs) {
        this.lastError = `no submit_sm_resp within ${this.timings.responseTimeoutMs} ms`;
        session.destroy();
        return;
      }
    }
    if (now - this.#lastHeard > this.timings.enquireLinkMs * 3) {
      this.lastError = 'no answer to enquire_link';
      session.destroy();
      return;
    }
    if (now - this.#lastHeard >= this.timings.enquireLinkMs) session.enquire_link();
  }

  /**
   * A write that fails because the SMSC reset the connection would close the socket at once, and
   * with it the answers the SMSC sent just before the reset, still unread: the part they answer
   * would be submitted again. Instead writing stops and the read side ends the connection, after
   * everything that arrived has been read.
   */
  #keepReadingAfterWriteError(session: smpp.Session): void {
    const socket = session.socket;
    const destroy = socket.destroy.bind(socket);
    socket.destroy = (err?: Error) => {
      if (!err || (err as NodeJS.ErrnoException).syscall !== 'write' || socket.destroyed || socket.readableEnded) return destroy(err);
      this.lastError = err.message;
      // Bounded: a peer that neither answers nor closes is dropped anyway.
      setTimeout(() => destroy(err), this.timings.responseTimeoutMs).unref();
      return socket;
    };
  }

  #closed(session: smpp.Session): void {
    if (this.#session !== session) return;
    this.#session = null;
    if (this.#keepAlive) clearInterval(this.#keepAlive);
    this.#keepAlive = null;
    const wasBound = this.state === 'bound';
    this.#readRemaining(session);
    this.#failAll(`link ${this.route.name} went down`);
    if (this.state === 'closed') return;
    this.state = 'idle';
    const delay = this.#reconnectDelay;
    this.#reconnectDelay = Math.min(this.timings.reconnectMaxMs, this.#reconnectDelay * 2);
    // A clear line per failure: an operator watching the log sees why and when it retries.
    this.log.warn(
      { route: this.route.name, host: this.route.host, port: this.route.port, reason: this.lastError ?? 'connection closed', retryInMs: delay },
      wasBound ? 'smpp link lost; messages wait as pending until it is back' : 'smpp bind failed; messages wait as pending',
    );
    this.#nextAttemptAt = Date.now() + delay;
    this.#reconnectTimer = setTimeout(() => this.#connect(), delay);
    this.#reconnectTimer.unref();
  }

  /**
   * Answers that reached the socket's buffer but were not parsed yet (the connection failed in
   * between) are read now, so that what the SMSC answered is not taken for lost.
   */
  #readRemaining(session: smpp.Session): void {
    const internals = session as unknown as { _busy: boolean; paused: boolean; _extractPDUs(): void };
    if (session.socket.readableLength === 0 || typeof internals._extractPDUs !== 'function') return;
    internals._busy = false;
    internals.paused = false;
    try {
      internals._extractPDUs();
    } catch (err) {
      this.log.debug({ err, route: this.route.name }, 'smpp: unreadable data after the link failed');
    }
  }

  #failAll(reason: string): void {
    const outstanding = [...this.#outstanding.values()];
    const queued = this.#queue;
    this.#outstanding.clear();
    this.#queue = [];
    if (this.#pumpTimer) clearTimeout(this.#pumpTimer);
    this.#pumpTimer = null;
    for (const p of outstanding) p.resolve({ kind: 'lost', reason });
    for (const p of queued) p.resolve({ kind: 'retry', reason });
  }

  /**
   * Writes run after the event loop has read the socket (setImmediate runs after I/O polling): a
   * submit is never written while an answer, a reset or the SMSC's end of the connection waits
   * unread, as it would be from a timer or a callback that runs before the poll.
   */
  #pump(): void {
    if (this.#pumpQueued) return;
    this.#pumpQueued = true;
    // Two turns: the first may still run in the check phase of the turn whose poll read an answer,
    // before the same poll's reads of a reset or end of the connection have been handled.
    setImmediate(() =>
      setImmediate(() => {
        this.#pumpQueued = false;
        this.#pumpNow();
      }),
    );
  }

  #pumpNow(): void {
    if (this.#pumpTimer || !this.bound || !this.#session) return;
    const session = this.#session;
    if (!session.socket.writable || session.socket.readableEnded) return;
    const now = Date.now();
    if (now < this.#throttledUntil) {
      this.#schedulePump(this.#throttledUntil - now);
      return;
    }
    // One write for everything this pass sends, instead of a syscall per PDU.
    corkForTurn(session.socket);
    this.#fill(session, now);
  }

  #fill(session: smpp.Session, now: number): void {
    while (this.#queue.length > 0 && this.#outstanding.size < this.route.window) {
      const next = this.#queue[0]!;
      if (now > next.deadline) {
        this.#queue.shift();
        next.resolve({ kind: 'retry', reason: 'the SMSC kept throttling', ...(next.throttledWith !== undefined ? { status: next.throttledWith } : {}) });
        continue;
      }
      if (this.#bucket && !this.#bucket.take(now)) {
        this.#schedulePump(this.#bucket.waitMs(now));
        return;
      }
      this.#queue.shift();
      const pdu = new smpp.PDU('submit_sm', { ...next.fields });
      if (!session.send(pdu)) {
        // Not writable: the close handler hands everything back for a retry.
        this.#queue.unshift(next);
        return;
      }
      this.#outstanding.set(pdu.sequence_number, { ...next, sentAt: now });
    }
  }

  #schedulePump(ms: number): void {
    this.#pumpTimer = setTimeout(() => {
      this.#pumpTimer = null;
      this.#pump();
    }, Math.max(1, ms));
  }

  #submitResponse(pdu: smpp.PDU): void {
    this.#lastHeard = Date.now();
    const o = this.#outstanding.get(pdu.sequence_number);
    if (!o) return;
    this.#outstanding.delete(pdu.sequence_number);
    const status = pdu.command_status;
    if (status === 0) {
      this.#throttleDelay = THROTTLE_MIN_MS;
      o.resolve({ kind: 'ok', messageId: String(pdu.message_id ?? '') });
    } else if (isTransientStatus(status)) {
      // Back off the whole link, then resend this part first. The carrier submits a message's
      // parts one after another, so no later part of this message is out yet: order is kept.
      this.#throttledUntil = Date.now() + this.#throttleDelay;
      this.log.debug({ route: this.route.name, status, backoffMs: this.#throttleDelay }, 'smpp throttled');
      this.#throttleDelay = Math.min(THROTTLE_MAX_MS, this.#throttleDelay * 2);
      o.throttledWith = status;
      this.#queue.unshift(o);
    } else {
      o.resolve({ kind: 'error', status });
    }
    this.#pump();
  }

  #deliver(session: smpp.Session, pdu: smpp.PDU): void {
    this.#lastHeard = Date.now();
    this.onDeliverSm(pdu).then(
      () => this.#answer(session, pdu.response()),
      (err: unknown) => {
        // Not stored: ask the SMSC to send it again rather than lose it.
        this.log.error({ err, route: this.route.name }, 'smpp deliver_sm could not be stored; answered with a temporary error');
        this.#answer(session, pdu.response({ command_status: ESME_RX_T_APPN }));
      },
    );
  }

  /**
   * Receipts that arrive together are recorded in one transaction, and their answers are all
   * ready in the same turn: they leave in one write, as submits do (#pumpNow), where a write per
   * answer was a syscall per receipt, about a tenth of the delivery process's time under a flood.
   */
  #answer(session: smpp.Session, response: smpp.PDU): void {
    corkForTurn(session.socket);
    session.send(response);
  }
}
