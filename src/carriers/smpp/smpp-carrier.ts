/**
 * The SMPP 3.4 connector (CARRIER=smpp): one link per configured SMSC route, each message sent
 * over the route of its recipient's longest matching prefix, one submit_sm per billed segment.
 * Receipts and inbound messages (deliver_sm) are handed to Pigeon's handlers and answered once
 * stored. See docs/smpp.md.
 */
import type { Logger } from 'pino';
import type { PDU } from 'smpp';
import type { SmppConfig } from '../../config/smpp-config.ts';
import type { Clock } from '../../util/ids.ts';
import type { Carrier, CarrierStatus, DeliveryReport, InboundCarrierMessage, OutboundMessage, SubmitOutcome } from '../carrier.ts';
import { inboundFromPdu } from './inbound-pdu.ts';
import { ESM_CLASS_RECEIPT, parseReceipt, receiptOutcome } from './receipt.ts';
import { chooseRoute } from './routes.ts';
import { SmppLink } from './smpp-link.ts';
import { submitErrorFor } from './smpp-status.ts';
import { buildSubmitParts } from './submit-parts.ts';

/** How long a message waits (pending) before the next try while its route is unbound. */
const UNBOUND_RETRY_MS = 1000;
const UNBOUND_RETRY_MAX_MS = 5000;
/** error_code of a message whose submit went unanswered twice (docs/smpp.md). */
export const SMPP_NO_RESPONSE = 'smpp_no_response';

/** The text of a decoded short_message / message_payload, whatever shape the library gave it. */
function textOf(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('latin1');
  if (typeof value === 'object' && 'message' in value) return textOf((value as { message: unknown }).message);
  return null;
}

export class SmppCarrier implements Carrier {
  readonly name = 'smpp';
  readonly links: SmppLink[];
  #started = false;
  #handler: ((report: DeliveryReport) => Promise<void>) | null = null;
  #inboundHandler: ((message: InboundCarrierMessage) => Promise<void>) | null = null;
  #reference = 0;
  /**
   * Messages to be tried again (a part hit a dropped link), by Pigeon's id: the retry keeps the
   * concatenation reference (a handset that got the first copy of a part can drop the second),
   * sends only the parts the SMSC did not acknowledge, and knows which parts were already written
   * once without an answer (those get one more submit, never two).
   */
  #retrying = new Map<string, { reference: number; ids: (string | undefined)[]; lost: boolean[] }>();

  constructor(
    config: SmppConfig,
    private readonly log: Logger,
    private readonly clock: Clock,
  ) {
    const timings = {
      enquireLinkMs: config.enquireLinkMs,
      reconnectMinMs: config.reconnectMinMs,
      reconnectMaxMs: config.reconnectMaxMs,
      responseTimeoutMs: config.responseTimeoutMs,
      queueDeadlineMs: 20_000,
    };
    this.links = config.routes.map((route) => new SmppLink(route, timings, log, (pdu) => this.#deliverSm(route.name, pdu)));
  }

  start(): void {
    if (this.#started) return;
    this.#started = true;
    for (const link of this.links) link.start();
  }

  /** Resolves when every route is bound (tests and the benchmark). */
  async whenBound(): Promise<void> {
    await Promise.all(this.links.map((l) => l.whenBound()));
  }

  async submit(messages: OutboundMessage[]): Promise<SubmitOutcome[]> {
    return Promise.all(messages.map((m) => this.#submitOne(m)));
  }

  async #submitOne(message: OutboundMessage): Promise<SubmitOutcome> {
    const route = chooseRoute(
      this.links.map((l) => l.route),
      message.recipient,
    );
    const link = this.links.find((l) => l.route === route);
    if (!link) return { kind: 'rejected', errorCode: 'no_route', errorMessage: 'No SMSC route serves this recipient.' };
    if (!this.#started || !link.bound) {
      const delayMs = Math.min(UNBOUND_RETRY_MAX_MS, Math.max(UNBOUND_RETRY_MS, link.retryInMs));
      return { kind: 'retry', delayMs, reason: `route ${link.route.name} is not bound` };
    }
    const earlier = this.#retrying.get(message.id);
    const reference = earlier?.reference ?? this.#reference++ & 0xff;
    const parts = buildSubmitParts(message, reference, this.clock());
    if (parts.length !== message.segments) {
      this.log.warn({ messageId: message.id, segments: message.segments, parts: parts.length }, 'smpp part count differs from the segments charged');
    }
    const state = earlier ?? { reference, ids: new Array<string | undefined>(parts.length), lost: new Array<boolean>(parts.length).fill(false) };
    // One part at a time, in order, over one bind: a part the SMSC throttles is resent before any
    // later part of its message goes out, and a dropped link leaves no later part in doubt.
    for (const [i, fields] of parts.entries()) {
      if (state.ids[i] !== undefined) continue;
      const result = await link.submit(fields);
      if (result.kind === 'ok') {
        state.ids[i] = result.messageId;
        continue;
      }
      if (result.kind === 'error') {
        this.#retrying.delete(message.id);
        return { kind: 'rejected', ...submitErrorFor(result.status) };
      }
      if (result.kind === 'lost') {
        if (state.lost[i]) {
          // Written twice without an answer: a third copy could reach the handset a third time.
          this.#retrying.delete(message.id);
          this.log.warn({ messageId: message.id, route: link.route.name, part: i + 1 }, 'smpp submit unanswered twice; the message fails');
          return { kind: 'rejected', errorCode: SMPP_NO_RESPONSE, errorMessage: 'The carrier connection failed twice before the carrier answered the message; it was not sent again.' };
        }
        state.lost[i] = true;
      }
      this.#retrying.set(message.id, state);
      return { kind: 'retry', delayMs: UNBOUND_RETRY_MS, reason: result.reason };
    }
    this.#retrying.delete(message.id);
    const partIds = state.ids as string[];
    return { kind: 'accepted', carrierMessageId: partIds[0]!, carrierPartIds: partIds };
  }

  onDeliveryReport(handler: (report: DeliveryReport) => Promise<void>): void {
    this.#handler = handler;
  }

  onInbound(handler: (message: InboundCarrierMessage) => Promise<void>): void {
    this.#inboundHandler = handler;
  }

  /**
   * Turns a deliver_sm into a DeliveryReport or an inbound message; resolves once it is stored
   * (then it is answered). A failure is answered with a temporary error (smpp-link.ts), so the
   * SMSC sends it again: nothing it thinks delivered is lost.
   */
  async #deliverSm(routeName: string, pdu: PDU): Promise<void> {
    const esmClass = Number(pdu.esm_class ?? 0);
    if ((esmClass & ESM_CLASS_RECEIPT) === 0) {
      const inbound = inboundFromPdu(routeName, pdu);
      if (!inbound) {
        this.log.warn({ route: routeName }, 'smpp deliver_sm without text ignored');
        return;
      }
      if (!this.#inboundHandler) throw new Error('no inbound message handler registered');
      await this.#inboundHandler(inbound);
      return;
    }
    const receipt = parseReceipt({
      text: textOf(pdu.short_message) ?? textOf(pdu.message_payload),
      receiptedMessageId: typeof pdu.receipted_message_id === 'string' ? pdu.receipted_message_id : null,
      messageState: typeof pdu.message_state === 'number' ? pdu.message_state : null,
      networkErrorCode: Buffer.isBuffer(pdu.network_error_code) ? pdu.network_error_code : null,
    });
    if (!receipt) {
      this.log.warn({ route: routeName }, 'smpp receipt without an id or a state ignored');
      return;
    }
    const outcome = receiptOutcome(receipt);
    if (!outcome) return;
    if (!this.#handler) throw new Error('no delivery report handler registered');
    // Pigeon's clock, not the receipt's done date: the latter has no time zone and minute precision.
    const report: DeliveryReport =
      outcome.status === 'delivered'
        ? { carrierMessageId: receipt.id, route: routeName, status: 'delivered', at: this.clock() }
        : { carrierMessageId: receipt.id, route: routeName, status: 'failed', errorCode: outcome.errorCode, errorMessage: outcome.errorMessage, at: this.clock() };
    await this.#handler(report);
  }

  status(): CarrierStatus {
    if (!this.#started) return { ready: true, detail: 'smpp: binds only in processes that run workers' };
    const down = this.links.filter((l) => !l.bound);
    if (down.length === 0) return { ready: true, detail: `smpp: ${this.links.length} route(s) bound` };
    const detail = down
      .map((l) => `route ${l.route.name} unbound${l.lastError ? ` (${l.lastError})` : ''}${l.retryInMs > 0 ? `, retry in ${Math.ceil(l.retryInMs / 1000)} s` : ''}`)
      .join('; ');
    return { ready: false, detail: `smpp: ${detail}` };
  }

  async close(): Promise<void> {
    await Promise.all(this.links.map((l) => l.close()));
  }
}
