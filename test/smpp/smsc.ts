/**
 * A scriptable SMSC on 127.0.0.1 built on the `smpp` package's server, for the connector's tests
 * and benchmark: it checks credentials, answers submits with ids in hex or decimal, sends receipts
 * as text and/or TLVs, throttles or refuses on demand, and drops connections mid-window.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import * as smpp from 'smpp';

export interface ReceivedSubmit {
  /** The id this SMSC answered with, or null when it was not acknowledged. */
  messageId: string | null;
  /** Which bind (connection) it came over, numbered from 1. */
  bind: number;
  destination: string;
  source: string;
  esmClass: number;
  dataCoding: number;
  registeredDelivery: number;
  /** The concatenation IE as the library decodes it: 00 03 ref total seq (no UDHL). */
  udh: Buffer | null;
  text: string;
  /** validity_period as sent (SMPP time), or null when absent. */
  validityPeriod: string | null;
}

export type IdStyle = 'hex' | 'decimal';
/** How a receipt spells the id: as answered, or converted / padded. */
export type IdSpelling = 'same' | 'decimal' | 'hex' | 'padded-decimal' | 'padded-hex' | 'lower';

export interface ReceiptOptions {
  stat: string;
  err?: string;
  format?: 'text' | 'tlv' | 'both';
  spelling?: IdSpelling;
  withSeconds?: boolean;
}

const MESSAGE_STATE: Record<string, number> = { ENROUTE: 1, DELIVRD: 2, EXPIRED: 3, DELETED: 4, UNDELIV: 5, ACCEPTD: 6, UNKNOWN: 7, REJECTD: 8 };

function smppDate(d: Date, seconds: boolean): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(d.getUTCFullYear() % 100)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${seconds ? p(d.getUTCSeconds()) : ''}`;
}

/** Spells an id this SMSC answered in `style` the way `spelling` says. */
export function spell(id: string, style: IdStyle, spelling: IdSpelling): string {
  const value = style === 'hex' ? BigInt(`0x${id}`) : BigInt(id);
  switch (spelling) {
    case 'same':
      return id;
    case 'decimal':
      return value.toString(10);
    case 'hex':
      return value.toString(16).toUpperCase();
    case 'padded-decimal':
      return value.toString(10).padStart(12, '0');
    case 'padded-hex':
      return value.toString(16).toUpperCase().padStart(10, '0');
    case 'lower':
      return id.toLowerCase();
  }
}

export class TestSmsc {
  readonly submits: ReceivedSubmit[] = [];
  /** command_status of every deliver_sm_resp received, in order. */
  readonly receiptAnswers: number[] = [];
  binds = 0;
  /** system_type of the last accepted bind. */
  systemType: string | null = null;
  enquireLinks = 0;
  bindFailures = 0;
  /** Refuse binds while true (ESME_RBINDFAIL). */
  refuseBinds = false;
  /** Answer the next submits with this status (e.g. 0x58 throttled) instead of accepting them. */
  #statusQueue: number[] = [];
  /** After this many more acknowledged submits, drop the connection on the next submit. */
  #dropAfter: number | null = null;
  /** While true, acknowledgements are held back until release() (to observe the window). */
  holdResponses = false;
  #held: (() => void)[] = [];
  /** Send a DELIVRD receipt right after each acknowledged submit (the benchmark). */
  autoReceipt: ReceiptOptions | null = null;
  #nextId = 0x1a2b3c0;
  #styleOf = new Map<string, IdStyle>();
  #server: smpp.Server;
  #sessions = new Set<smpp.Session>();
  #bound: smpp.Session | null = null;
  port = 0;

  constructor(
    private readonly credentials: { systemId: string; password: string },
    public idStyle: IdStyle = 'hex',
  ) {
    this.#server = smpp.createServer((session) => this.#session(session));
  }

  async listen(port = 0): Promise<number> {
    this.#server.listen(port, '127.0.0.1');
    await once(this.#server, 'listening');
    this.port = (this.#server.address() as AddressInfo).port;
    return this.port;
  }

  /** Stops listening and drops every connection (the link goes down). */
  async stop(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.dropConnections();
    await closed;
  }

  dropConnections(): void {
    for (const s of this.#sessions) s.destroy();
  }

  /** Sends the held acknowledgements and stops holding. */
  release(): void {
    this.holdResponses = false;
    const held = this.#held;
    this.#held = [];
    held.forEach((send) => send());
  }

  /** The next `count` submits are answered with `status` and not acknowledged. */
  answerNext(count: number, status: number): void {
    for (let i = 0; i < count; i++) this.#statusQueue.push(status);
  }

  /** Acknowledge `count` more submits, then drop the connection when the next one arrives. */
  dropAfter(count: number): void {
    this.#dropAfter = count;
  }

  /** Connections open now (a bound link holds one). */
  get connections(): number {
    return this.#sessions.size;
  }

  get acknowledged(): ReceivedSubmit[] {
    return this.submits.filter((s) => s.messageId !== null);
  }

  #id(): string {
    const n = this.#nextId++;
    const id = this.idStyle === 'hex' ? n.toString(16).toUpperCase().padStart(8, '0') : String(n);
    this.#styleOf.set(id, this.idStyle);
    return id;
  }

  #session(session: smpp.Session): void {
    this.#sessions.add(session);
    session.socket.setNoDelay(true);
    session.on('close', () => {
      this.#sessions.delete(session);
      if (this.#bound === session) this.#bound = null;
    });
    session.on('error', () => {});
    let bind = 0;
    session.on('bind_transceiver', (pdu: smpp.PDU) => {
      if (this.refuseBinds || pdu.system_id !== this.credentials.systemId || pdu.password !== this.credentials.password) {
        this.bindFailures++;
        session.send(pdu.response({ command_status: 0x0d }));
        setImmediate(() => session.destroy());
        return;
      }
      bind = ++this.binds;
      this.systemType = String(pdu.system_type ?? '');
      this.#bound = session;
      session.send(pdu.response({ system_id: 'test-smsc' }));
    });
    session.on('enquire_link', (pdu: smpp.PDU) => {
      this.enquireLinks++;
      session.send(pdu.response());
    });
    session.on('unbind', (pdu: smpp.PDU) => {
      session.send(pdu.response());
      session.close();
    });
    session.on('deliver_sm_resp', (pdu: smpp.PDU) => this.receiptAnswers.push(pdu.command_status));
    let dropped = false;
    session.on('submit_sm', (pdu: smpp.PDU) => {
      // PDUs already read from the socket still arrive after a drop; they were never answered.
      if (dropped || session.socket.destroyed) return;
      if (this.#dropAfter === 0) {
        this.#dropAfter = null;
        dropped = true;
        // The answers already given reach the client; this submit and any after it never do.
        while (session.socket.writableCorked > 0) session.socket.uncork();
        session.socket.end();
        setTimeout(() => session.destroy(), 100).unref();
        return;
      }
      const sm = pdu.short_message as { udh?: Buffer[]; message?: string | Buffer } | undefined;
      const received: ReceivedSubmit = {
        messageId: null,
        bind,
        destination: String(pdu.destination_addr),
        source: String(pdu.source_addr),
        esmClass: Number(pdu.esm_class),
        dataCoding: Number(pdu.data_coding),
        registeredDelivery: Number(pdu.registered_delivery),
        udh: sm?.udh?.[0] ?? null,
        text: typeof sm?.message === 'string' ? sm.message : String(sm?.message ?? ''),
        validityPeriod: pdu.validity_period ? (pdu.validity_period instanceof Date ? pdu.validity_period.toISOString() : String(pdu.validity_period)) : null,
      };
      this.submits.push(received);
      // Answers to PDUs read together leave together (one write, as a real SMSC would batch them).
      session.socket.cork();
      process.nextTick(() => session.socket.uncork());
      const status = this.#statusQueue.shift();
      if (status !== undefined) {
        session.send(pdu.response({ command_status: status }));
        return;
      }
      const acknowledge = () => {
        received.messageId = this.#id();
        if (this.#dropAfter !== null) this.#dropAfter--;
        session.send(pdu.response({ message_id: received.messageId }));
        if (this.autoReceipt) void this.sendReceipt(received.messageId, this.autoReceipt);
      };
      if (this.holdResponses) this.#held.push(acknowledge);
      else acknowledge();
    });
  }

  /** Sends a receipt for `messageId` over the current bind; resolves with the deliver_sm_resp status. */
  sendReceipt(messageId: string, opts: ReceiptOptions): Promise<number> {
    const session = this.#bound;
    if (!session) throw new Error('no bound session to send a receipt on');
    const id = spell(messageId, this.#styleOf.get(messageId) ?? this.idStyle, opts.spelling ?? 'same');
    const format = opts.format ?? 'text';
    const err = opts.err ?? '000';
    const now = new Date();
    const fields: Record<string, unknown> = { source_addr: '447911123456', destination_addr: 'Acme', esm_class: 0x04 };
    if (format !== 'tlv') {
      const date = smppDate(now, opts.withSeconds ?? false);
      fields.short_message = `id:${id} sub:001 dlvrd:${opts.stat === 'DELIVRD' ? '001' : '000'} submit date:${date} done date:${date} stat:${opts.stat} err:${err} text:`;
    }
    if (format !== 'text') {
      fields.receipted_message_id = id;
      fields.message_state = MESSAGE_STATE[opts.stat] ?? 7;
      fields.network_error_code = Buffer.from([3, Number(err) >> 8, Number(err) & 0xff]);
    }
    return new Promise((resolve) => session.deliver_sm(fields, (resp) => resolve(resp.command_status)));
  }

  /** Sends any deliver_sm (an inbound message, a part) over the current bind; resolves with the deliver_sm_resp status. */
  deliver(fields: Record<string, unknown>): Promise<number> {
    const session = this.#bound;
    if (!session) throw new Error('no bound session to deliver on');
    return new Promise((resolve) => session.deliver_sm(fields, (resp) => resolve(resp.command_status)));
  }
}
