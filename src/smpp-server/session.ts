/**
 * One SMPP connection (DECISIONS.md §10). Before a bind it answers `enquire_link` and the bind
 * itself; anything else gets 0x04 or generic_nack, and silence past the bind timeout closes it.
 * Bound, it takes `submit_sm` (transmitter, transceiver) and receives `deliver_sm` (receiver,
 * transceiver). A PDU that cannot be read is answered with generic_nack and ends the connection;
 * bytes that are not SMPP end it without an answer. Every path ends in `socket.destroy()` within
 * a second, so no connection outlives its peer's silence.
 */
import type { Socket } from 'node:net';
import { corkForTurn } from '../util/cork.ts';
import { newId } from '../util/ids.ts';
import type { SmppUser } from '../services/smpp-access/smpp-users.ts';
import type { BindRecord } from '../services/smpp-access/smpp-binds.ts';
import type { DeliverFields } from '../services/smpp-access/smpp-outbox.ts';
import { acceptSmppSubmission } from '../services/smpp-access/smpp-submit.ts';
import { secondsFrom } from '../domain/smpp-time.ts';
import { CMD, RESP, STATUS, TLV, MalformedPdu, PduFramer, cstring, deliverSmBody, encodePdu, readBind, readSubmitSm, tlv, type Pdu } from './pdu.ts';
import { decodeText, readSubmitContent } from './submit-content.ts';
import type { PartAdded, PartReceipts, PartsGroup } from '../services/smpp-access/smpp-parts.ts';
import { isTemporary, submitStatusFor } from './status-map.ts';
import { checkRateLimit } from '../services/rate-limit/rate-limit.ts';
import { DELIVER_WINDOW, type DeliverAnswer, type SessionHost } from './session-host.ts';
import { smppBinds, smppSubmits } from '../metrics.ts';

export interface SessionTimings {
  /** No bind within this long: closed. */
  bindTimeoutMs: number;
  /** Silence this long: the server sends enquire_link; three unanswered close the connection. */
  enquireLinkMs: number;
  /** A deliver_sm unanswered this long is sent again later. */
  responseTimeoutMs: number;
}

export type BindType = 'transmitter' | 'receiver' | 'transceiver';

const BIND_TYPES: Record<number, BindType> = {
  [CMD.bind_transmitter]: 'transmitter',
  [CMD.bind_receiver]: 'receiver',
  [CMD.bind_transceiver]: 'transceiver',
};

/** Requests SMPP 3.4 defines that Pigeon does not serve: generic_nack 0x03 like unknown ones. */
const ACCEPTED_VERSIONS = (v: number) => v <= 0x34 || v === 0x50;
/** A peer that reads nothing while we write is cut off past this many unsent octets. */
const MAX_UNSENT = 1024 * 1024;
const UNBIND_WAIT_MS = 1_000;

/** The response id of a request id, unsigned as the wire has it (`|` alone gives a negative number). */
function resp(id: number): number {
  return (id | RESP) >>> 0;
}

interface InFlight {
  timer: NodeJS.Timeout;
  done: (status: DeliverAnswer) => void;
}

export class Session {
  readonly address: string;
  state: 'open' | 'binding' | 'bound' | 'unbinding' | 'closed' = 'open';
  bindType: BindType | null = null;
  user: SmppUser | null = null;
  accountId = '';
  /** The password hash this bind proved: a rotation replaces it and ends the bind. */
  credential = '';
  bindId = '';
  since = 0;
  submits = 0;
  /** The count last written to the bind's row. */
  submitsWritten = 0;
  readonly #framer = new PduFramer();
  #seq = 0;
  #bindTimer: NodeJS.Timeout | null = null;
  #enquireTimer: NodeJS.Timeout | null = null;
  #lastHeard: number;
  #unanswered = 0;
  readonly #inFlight = new Map<number, InFlight>();
  #recorded = false;
  /** Counted in pigeon_smpp_binds until the socket goes. */
  #counted = false;

  constructor(
    private readonly server: SessionHost,
    private readonly socket: Socket,
    private readonly timings: SessionTimings,
  ) {
    this.address = socket.remoteAddress ?? '';
    this.#lastHeard = Date.now();
    socket.on('data', (chunk: Buffer) => this.#data(chunk));
    socket.on('error', (err) => server.ctx.log.debug({ err, address: this.address }, 'smpp session socket error'));
    socket.on('end', () => this.#close());
    this.#startBindTimer();
    this.#enquireTimer = setInterval(() => this.#keepAlive(), Math.max(10, Math.floor(timings.enquireLinkMs / 2)));
  }

  /** A refused bind starts the wait again: every try costs the peer a failed-bind count. */
  #startBindTimer(): void {
    this.#stopBindTimer();
    this.#bindTimer = setTimeout(() => this.#close(), this.timings.bindTimeoutMs);
  }

  #stopBindTimer(): void {
    if (this.#bindTimer) clearTimeout(this.#bindTimer);
    this.#bindTimer = null;
  }

  /** Read through a getter: the state changes across awaits, which narrowing does not see. */
  get isClosed(): boolean {
    return this.state === 'closed';
  }

  get bound(): boolean {
    return this.state === 'bound';
  }

  get receives(): boolean {
    return this.state === 'bound' && (this.bindType === 'receiver' || this.bindType === 'transceiver');
  }

  get deliveriesInFlight(): number {
    return this.#inFlight.size;
  }

  bindRecord(): BindRecord {
    return { id: this.bindId, system_id: this.user!.system_id, bind_type: this.bindType!, address: this.address, since: this.since };
  }

  #write(buffer: Buffer): void {
    if (this.state === 'closed' || !this.socket.writable) return;
    if (this.socket.writableLength > MAX_UNSENT) {
      this.#close();
      return;
    }
    // The answers to a group of submits are written at once (one commit settles them all), and
    // deliveries go out in windows: corked until the current run of callbacks ends, they leave
    // in one write instead of one system call per PDU. (So a bind_resp and the first deliveries
    // may come in one read: a client listens for deliver_sm before it binds.)
    corkForTurn(this.socket);
    this.socket.write(buffer);
  }

  #respond(request: Pdu, status: number, body?: Buffer): void {
    if (request.id === CMD.submit_sm) smppSubmits.inc({ status: `0x${status.toString(16).padStart(8, '0')}` });
    this.#write(encodePdu(resp(request.id), status, request.seq, status === STATUS.ROK ? body : undefined));
  }

  #nack(seq: number, status: number): void {
    this.#write(encodePdu(CMD.generic_nack, status, seq));
  }

  #nextSeq(): number {
    this.#seq = this.#seq >= 0x7fffffff ? 1 : this.#seq + 1;
    return this.#seq;
  }

  /** Ends the connection: a FIN now, and the socket destroyed a second later if the peer lingers. */
  #close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.socket.end();
    setTimeout(() => this.socket.destroy(), UNBIND_WAIT_MS).unref();
  }

  #data(chunk: Buffer): void {
    if (this.state === 'closed') return;
    this.#lastHeard = Date.now();
    this.#unanswered = 0;
    for (const framed of this.#framer.push(chunk)) {
      if (framed.kind === 'not-smpp') {
        this.state = 'closed';
        this.socket.destroy();
        return;
      }
      if (framed.kind === 'malformed') {
        this.#nack(framed.seq, STATUS.RINVCMDLEN);
        this.#close();
        return;
      }
      this.#pdu(framed.pdu);
      if (this.isClosed) return;
    }
  }

  /** A failure nobody foresaw ends this connection, never the process. */
  #guard(pdu: Pdu, work: Promise<void>): void {
    work.catch((err: unknown) => {
      this.server.ctx.log.error({ err, address: this.address }, 'smpp session failed; connection closed');
      this.#nack(pdu.seq, STATUS.RSYSERR);
      this.#close();
    });
  }

  #malformed(pdu: Pdu, err: unknown): void {
    this.server.ctx.log.debug({ err, address: this.address }, 'smpp session: malformed PDU');
    this.#nack(pdu.seq, STATUS.RINVCMDLEN);
    this.#close();
  }

  #pdu(pdu: Pdu): void {
    const bindType = BIND_TYPES[pdu.id];
    if (bindType) {
      this.#guard(pdu, this.#bind(pdu, bindType));
      return;
    }
    switch (pdu.id) {
      case CMD.enquire_link:
        this.#respond(pdu, STATUS.ROK);
        return;
      case resp(CMD.enquire_link):
        return;
      case CMD.unbind:
        this.#respond(pdu, STATUS.ROK);
        this.#close();
        return;
      case resp(CMD.unbind):
        if (this.state === 'unbinding') this.#close();
        return;
      case CMD.submit_sm:
        this.#guard(pdu, this.#submit(pdu));
        return;
      case resp(CMD.deliver_sm):
      case CMD.generic_nack: {
        const waiting = this.#inFlight.get(pdu.seq);
        if (waiting) {
          this.#inFlight.delete(pdu.seq);
          clearTimeout(waiting.timer);
          waiting.done(pdu.id === CMD.generic_nack ? (pdu.status || STATUS.RSYSERR) : pdu.status);
        }
        return;
      }
      default:
        // A response to nothing we sent is dropped; any other request is not served.
        if (pdu.id < RESP) this.#nack(pdu.seq, STATUS.RINVCMDID);
    }
  }

  async #bind(pdu: Pdu, type: BindType): Promise<void> {
    if (this.state !== 'open') {
      this.#respond(pdu, STATUS.RALYBND);
      return;
    }
    let body;
    try {
      body = readBind(pdu.body);
    } catch (err) {
      if (err instanceof MalformedPdu) return this.#malformed(pdu, err);
      throw err;
    }
    this.state = 'binding';
    // The peer asked in time: checking its password (a scrypt) does not count against it.
    this.#stopBindTimer();
    const log = this.server.ctx.log;
    if (!ACCEPTED_VERSIONS(body.interfaceVersion)) {
      this.#respond(pdu, STATUS.RBINDFAIL);
      this.state = 'open';
      this.#startBindTimer();
      return;
    }
    try {
      const decision = await this.server.bind(
        body.systemId,
        () => this.server.decideBind(body.systemId, body.password, this.address),
        async (d) => {
          // Closed while the password was checked: nothing to record.
          if (!d.ok || this.state !== 'binding') return;
          this.user = d.user;
          this.accountId = d.accountId;
          this.credential = d.credential;
          this.bindType = type;
          this.bindId = newId('smb');
          this.since = this.server.ctx.clock();
          await this.server.recordBind(this);
          if (this.isClosed) await this.server.forgetBind(this.bindId);
          else this.#recorded = true;
        },
      );
      if (this.state !== 'binding') return;
      if (!decision.ok) {
        log.info({ system_id: body.systemId.slice(0, 16), address: this.address, status: decision.status, reason: decision.reason }, 'smpp bind refused');
        this.#respond(pdu, decision.status);
        this.state = 'open';
        this.#startBindTimer();
        return;
      }
      this.state = 'bound';
      this.#counted = true;
      smppBinds.inc({ bind_type: type });
      this.#respond(pdu, STATUS.ROK, Buffer.concat([cstring('Pigeon'), tlv(TLV.sc_interface_version, Buffer.from([0x34]))]));
      log.info({ system_id: this.user!.system_id, bind_type: type, address: this.address }, 'smpp bound');
      if (this.receives) this.server.outbox.pump(this.user!.system_id);
    } catch (err) {
      log.error({ err }, 'smpp bind failed');
      if (this.state === 'binding') {
        this.#respond(pdu, STATUS.RSYSERR);
        this.state = 'open';
        this.#startBindTimer();
      }
    }
  }

  async #submit(pdu: Pdu): Promise<void> {
    if (this.state !== 'bound' || this.bindType === 'receiver') {
      this.#respond(pdu, STATUS.RINVBNDSTS);
      return;
    }
    let sm;
    try {
      sm = readSubmitSm(pdu.body);
    } catch (err) {
      if (err instanceof MalformedPdu) return this.#malformed(pdu, err);
      throw err;
    }
    const user = this.user!;
    this.submits++;
    if (!this.server.takeToken(user.system_id, user.tps)) {
      this.#respond(pdu, STATUS.RTHROTTLED);
      return;
    }
    const now = this.server.ctx.clock();
    try {
      await checkRateLimit(this.server.rateLimits, this.accountId, this.server.ctx.config.rateLimit, now);
    } catch (err) {
      this.#failedSubmit(pdu, err);
      return;
    }
    const check = readSubmitContent(sm, now);
    if (!check.ok) {
      this.#respond(pdu, check.status);
      return;
    }
    const content = check.content;
    const addresses = { sourceAddr: sm.source, sourceTon: sm.sourceTon, destinationAddr: sm.destination };
    let messageId: string;
    let partId: string;
    let partIds: string[];
    let text: string;
    let registeredDelivery = content.registeredDelivery;
    let earlier: PartReceipts[] = [];
    let group: PartsGroup | undefined;
    if (content.part) {
      let added: PartAdded;
      try {
        added = await this.server.parts.add(user.system_id, content, addresses);
      } catch (err) {
        // Not stored, so not answered with an id: the client sends the part again.
        this.#failedSubmit(pdu, err);
        return;
      }
      if (added.kind === 'late') {
        this.#respond(pdu, STATUS.RSUBMITFAIL);
        return;
      }
      if (added.kind !== 'complete') {
        this.#respond(pdu, STATUS.ROK, cstring(added.partId));
        return;
      }
      ({ messageId, partId, text, group } = added);
      // Receipts for the parts that asked, as they asked (the first that asked says how).
      const asking = added.parts.filter((p) => (p.registeredDelivery & 0x03) !== 0);
      partIds = asking.length > 0 ? asking.map((p) => p.id) : added.partIds;
      registeredDelivery = asking[0]?.registeredDelivery ?? content.registeredDelivery;
      earlier = added.parts.filter((p) => p.id !== partId);
    } else {
      messageId = newId('msg', now);
      partId = messageId;
      partIds = [messageId];
      text = decodeText(content.dataCoding, content.payload);
    }
    let validitySeconds: number | null = null;
    if (content.validUntil !== null) {
      validitySeconds = secondsFrom(content.validUntil, Math.max(now, content.sendAt ?? now));
      if (validitySeconds === null) {
        await this.#refuseParts(group, earlier);
        this.#respond(pdu, STATUS.RINVEXPIRY);
        return;
      }
    }
    try {
      await acceptSmppSubmission(this.server.ctx, {
        accountId: this.accountId,
        systemId: user.system_id,
        messageId,
        partIds,
        from: content.from,
        to: content.to,
        text,
        sendAt: content.sendAt,
        validitySeconds,
        registeredDelivery,
        ...addresses,
        ...(group ? { partsGroup: group } : {}),
      });
      this.#respond(pdu, STATUS.ROK, cstring(partId));
    } catch (err) {
      // Refused for good: the message is done with, its earlier parts get REJECTD. A temporary
      // answer stored nothing either, but the client sends the last part again: the parts stay.
      if (!isTemporary(submitStatusFor(err))) await this.#refuseParts(group, earlier);
      this.#failedSubmit(pdu, err);
    }
  }

  #failedSubmit(pdu: Pdu, err: unknown): void {
    const status = submitStatusFor(err);
    if (status === STATUS.RSYSERR) this.server.ctx.log.error({ err, system_id: this.user?.system_id }, 'smpp submit failed');
    this.#respond(pdu, status);
  }

  async #refuseParts(group: PartsGroup | undefined, parts: PartReceipts[]): Promise<void> {
    if (!group) return;
    try {
      await this.server.parts.refuse(group, parts);
    } catch (err) {
      // The sweep gives the group up later, with a REJECTD receipt for every part.
      this.server.ctx.log.warn({ err, system_id: group.system_id }, 'smpp: could not mark refused parts; the sweep will');
    }
  }

  /** Sends a deliver_sm; `done` gets the answer's status, null when none came in time, or 'gone' when the link went first. */
  deliver(fields: DeliverFields, done: (status: DeliverAnswer) => void): void {
    const seq = this.#nextSeq();
    const timer = setTimeout(() => {
      this.#inFlight.delete(seq);
      done(null);
    }, this.timings.responseTimeoutMs);
    this.#inFlight.set(seq, { timer, done });
    this.#write(encodePdu(CMD.deliver_sm, 0, seq, deliverSmBody(fields)));
  }

  /** Before a bind the bind timeout governs; once bound, silence is probed with enquire_link. */
  #keepAlive(): void {
    if (this.state !== 'bound' && this.state !== 'unbinding') return;
    if (Date.now() - this.#lastHeard < this.timings.enquireLinkMs) return;
    if (this.#unanswered >= 3) {
      this.#close();
      return;
    }
    this.#unanswered++;
    this.#lastHeard = Date.now();
    this.#write(encodePdu(CMD.enquire_link, 0, this.#nextSeq()));
  }

  /** The server ends the bind: `unbind`, then the connection closes on the answer or a second later. */
  endBind(reason: string): void {
    if (this.state !== 'bound') return;
    this.server.ctx.log.info({ system_id: this.user?.system_id, address: this.address, reason }, 'smpp bind ended by the server');
    this.state = 'unbinding';
    this.#write(encodePdu(CMD.unbind, 0, this.#nextSeq()));
    setTimeout(() => this.#close(), UNBIND_WAIT_MS).unref();
  }

  /** Shutdown: unbind a bound session, close any other; resolves once the socket is gone. */
  shutdown(): Promise<void> {
    return new Promise((resolve) => {
      if (this.socket.destroyed) return resolve();
      this.socket.once('close', () => resolve());
      if (this.state === 'bound') this.endBind('shutting down');
      else this.#close();
    });
  }

  /** The socket is gone: timers stop, unanswered deliveries are due again, the bind row goes. */
  closed(): void {
    this.state = 'closed';
    if (this.#counted) {
      this.#counted = false;
      smppBinds.dec({ bind_type: this.bindType! });
    }
    this.#stopBindTimer();
    if (this.#enquireTimer) clearInterval(this.#enquireTimer);
    for (const [seq, waiting] of this.#inFlight) {
      clearTimeout(waiting.timer);
      this.#inFlight.delete(seq);
      waiting.done('gone');
    }
    if (this.#recorded) {
      this.#recorded = false;
      this.server.forgetBind(this.bindId).catch((err: unknown) => this.server.ctx.log.warn({ err }, 'smpp: could not remove a bind row'));
    }
  }
}
