/**
 * The SMPP 3.4 connector (CARRIER=smpp): one link per configured SMSC route, each message sent
 * over the route of its recipient's longest matching prefix, one submit_sm per billed segment.
 * Receipts (deliver_sm) are handed to Pigeon's handler and answered once stored. See docs/smpp.md.
 */
import type { Logger } from 'pino';
import type { PDU } from 'smpp';
import type { SmppConfig } from '../../config/smpp-config.ts';
import type { Clock } from '../../util/ids.ts';
import type { Carrier, CarrierStatus, DeliveryReport, OutboundMessage, SubmitOutcome } from '../carrier.ts';
import { ESM_CLASS_RECEIPT, parseReceipt, receiptOutcome } from './receipt.ts';
import { chooseRoute } from './routes.ts';
import { SmppLink, type PartResult } from './smpp-link.ts';
import { submitErrorFor } from './smpp-status.ts';
import { buildSubmitParts } from './submit-parts.ts';

/** How long a message waits (pending) before the next try while its route is unbound. */
const UNBOUND_RETRY_MS = 1000;
const UNBOUND_RETRY_MAX_MS = 5000;

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
  #reference = 0;
  /**
   * Parts the SMSC already acknowledged of messages that must be tried again (a later part hit a
   * dropped link): the retry sends only the rest, so nothing acknowledged is sent twice.
   */
  #acknowledged = new Map<string, { reference: number; ids: (string | undefined)[] }>();

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
    const earlier = this.#acknowledged.get(message.id);
    const reference = earlier?.reference ?? this.#reference++ & 0xff;
    const parts = buildSubmitParts(message, reference);
    if (parts.length !== message.segments) {
      this.log.warn({ messageId: message.id, segments: message.segments, parts: parts.length }, 'smpp part count differs from the segments charged');
    }
    const ids = earlier?.ids ?? new Array<string | undefined>(parts.length);
    // Queued back to back on one link, so all parts go over the same bind, in order.
    const results = await Promise.all(
      parts.map((fields, i): Promise<PartResult> => (ids[i] !== undefined ? Promise.resolve({ kind: 'ok', messageId: ids[i]! }) : link.submit(fields))),
    );
    results.forEach((r, i) => {
      if (r.kind === 'ok') ids[i] = r.messageId;
    });
    const refused = results.find((r): r is Extract<PartResult, { kind: 'error' }> => r.kind === 'error');
    if (refused) {
      this.#acknowledged.delete(message.id);
      return { kind: 'rejected', ...submitErrorFor(refused.status) };
    }
    const retry = results.find((r): r is Extract<PartResult, { kind: 'retry' }> => r.kind === 'retry');
    if (retry) {
      if (ids.some((id) => id !== undefined)) this.#acknowledged.set(message.id, { reference, ids });
      return { kind: 'retry', delayMs: UNBOUND_RETRY_MS, reason: retry.reason };
    }
    this.#acknowledged.delete(message.id);
    const partIds = ids as string[];
    return { kind: 'accepted', carrierMessageId: partIds[0]!, carrierPartIds: partIds };
  }

  onDeliveryReport(handler: (report: DeliveryReport) => Promise<void>): void {
    this.#handler = handler;
  }

  /** Turns a deliver_sm into a DeliveryReport; resolves once it is stored (then it is answered). */
  async #deliverSm(routeName: string, pdu: PDU): Promise<void> {
    const esmClass = Number(pdu.esm_class ?? 0);
    if ((esmClass & ESM_CLASS_RECEIPT) === 0) {
      this.log.info({ route: routeName, esmClass }, 'smpp deliver_sm that is not a receipt ignored (inbound messages are not supported)');
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
        ? { carrierMessageId: receipt.id, status: 'delivered', at: this.clock() }
        : { carrierMessageId: receipt.id, status: 'failed', errorCode: outcome.errorCode, errorMessage: outcome.errorMessage, at: this.clock() };
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
