/**
 * The SMPP 3.4 connector (CARRIER=smpp): one link per SMSC route, each message sent over the bound
 * route of its recipient's longest matching prefix, highest priority first, one submit_sm per
 * billed segment; a route that refuses it with one of its failover codes or does not answer sends
 * it on to the next (docs/pricing-and-routing.md). Receipts and inbound messages (deliver_sm) are
 * handed to Pigeon's handlers and answered once stored. See docs/smpp.md.
 */
import type { Logger } from 'pino';
import type { PDU } from 'smpp';
import type { SmppConfig, SmppRouteConfig } from '../../config/smpp-config.ts';
import { DEFAULT_FAILOVER_CODES, routeCandidates } from '../../domain/smpp-routes.ts';
import type { Clock } from '../../util/ids.ts';
import type { Carrier, CarrierStatus, DeliveryReport, InboundCarrierMessage, OutboundMessage, RouteLinkState, SubmitOutcome } from '../carrier.ts';
import { inboundFromPdu } from './inbound-pdu.ts';
import { ESM_CLASS_RECEIPT, parseReceipt, receiptOutcome } from './receipt.ts';
import { SmppLink, type LinkTimings } from './smpp-link.ts';
import { submitErrorFor } from './smpp-status.ts';
import { buildSubmitParts } from './submit-parts.ts';

/** How long a message waits (pending) before the next try while its route is unbound. */
const UNBOUND_RETRY_MS = 1000;
const UNBOUND_RETRY_MAX_MS = 5000;
/** error_code of a message whose submit went unanswered twice (docs/smpp.md). */
export const SMPP_NO_RESPONSE = 'smpp_no_response';
const NO_RESPONSE_ERROR = { errorCode: SMPP_NO_RESPONSE, errorMessage: 'The carrier connection failed twice before the carrier answered the message; it was not sent again.' };
const NO_ROUTE_ERROR = { errorCode: 'no_route', errorMessage: 'No SMSC route serves this recipient.' };

/** The prefixes a route matches: a default route (no prefixes) matches every recipient. */
function prefixesOf(route: SmppRouteConfig): string[] {
  return route.default || route.prefixes.length === 0 ? [...route.prefixes, '+'] : route.prefixes;
}

/** Whether a link can take `next` as it is, or must bind again (another address or other credentials). */
function sameConnection(a: SmppRouteConfig, b: SmppRouteConfig): boolean {
  return a.host === b.host && a.port === b.port && a.systemId === b.systemId && a.password === b.password && a.systemType === b.systemType;
}

/** A message's progress on one route: the parts it acknowledged, and the parts written without an answer. */
interface PartsState {
  route: string;
  reference: number;
  ids: (string | undefined)[];
  lost: boolean[];
}

type PartsResult =
  | { kind: 'accepted'; ids: string[] }
  | { kind: 'refused'; status: number }
  | { kind: 'lost'; reason: string; twice: boolean }
  | { kind: 'retry'; reason: string; status?: number };

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
  /** One per route, in the order the routes were given. Replaced by `setRoutes`. */
  links: SmppLink[];
  #started = false;
  #handler: ((report: DeliveryReport) => Promise<void>) | null = null;
  #inboundHandler: ((message: InboundCarrierMessage) => Promise<void>) | null = null;
  #reference = 0;
  readonly #timings: LinkTimings;
  /** Links of removed or re-addressed routes, unbinding. */
  readonly #closing = new Set<Promise<void>>();
  /**
   * Messages to be tried again on the route that has some of their parts, by Pigeon's id: the
   * retry keeps the concatenation reference (a handset that got the first copy of a part can drop
   * the second), sends only the parts the SMSC did not acknowledge, and knows which parts were
   * already written once without an answer (those get one more submit, never two).
   */
  #retrying = new Map<string, PartsState>();

  /** `queueDeadlineMs`: how long a throttled submit is retried on its route before it is handed back (tests shorten it). */
  constructor(
    config: SmppConfig,
    private readonly log: Logger,
    private readonly clock: Clock,
    opts: { queueDeadlineMs?: number } = {},
  ) {
    this.#timings = {
      enquireLinkMs: config.enquireLinkMs,
      reconnectMinMs: config.reconnectMinMs,
      reconnectMaxMs: config.reconnectMaxMs,
      responseTimeoutMs: config.responseTimeoutMs,
      queueDeadlineMs: opts.queueDeadlineMs ?? 20_000,
    };
    this.links = config.routes.map((route) => this.#link(route));
  }

  #link(route: SmppRouteConfig): SmppLink {
    const name = route.name;
    return new SmppLink(route, this.#timings, this.log, (pdu) => this.#deliverSm(name, pdu));
  }

  start(): void {
    if (this.#started) return;
    this.#started = true;
    for (const link of this.links) link.start();
  }

  /**
   * Takes the routes as they now are: a new route binds, a removed one unbinds (its queued submits
   * come back and go to the remaining routes), one with another address or other credentials binds
   * again; any other change applies to the bound link as it is.
   */
  setRoutes(routes: SmppRouteConfig[]): void {
    const current = new Map(this.links.map((l) => [l.route.name, l]));
    const next: SmppLink[] = [];
    const closing: SmppLink[] = [];
    for (const route of routes) {
      const link = current.get(route.name);
      current.delete(route.name);
      if (link && sameConnection(link.route, route)) {
        link.update(route);
        next.push(link);
        continue;
      }
      if (link) closing.push(link);
      const fresh = this.#link(route);
      next.push(fresh);
      if (this.#started) fresh.start();
      this.log.info({ route: route.name, host: route.host, port: route.port }, link ? 'smpp route changed; binding again' : 'smpp route added');
    }
    for (const link of current.values()) {
      closing.push(link);
      this.log.info({ route: link.route.name }, 'smpp route removed; unbinding');
    }
    this.links = next;
    for (const link of closing) {
      const done: Promise<void> = link.close().catch((err: unknown) => this.log.warn({ err, route: link.route.name }, 'smpp link did not close cleanly'));
      this.#closing.add(done);
      void done.finally(() => this.#closing.delete(done));
    }
  }

  routeLinks(): RouteLinkState[] {
    return this.links.map((l) => ({ route: l.route.name, state: this.#started ? l.state : 'idle', lastError: l.lastError }));
  }

  /** Resolves when every route is bound (tests and the benchmark). */
  async whenBound(): Promise<void> {
    await Promise.all(this.links.map((l) => l.whenBound()));
  }

  async submit(messages: OutboundMessage[]): Promise<SubmitOutcome[]> {
    return Promise.all(messages.map((m) => this.#submitOne(m)));
  }

  /**
   * Tries the routes that serve the recipient in order (routeCandidates), skipping the unbound
   * ones and those the message already tried. A route that refuses it with one of its failover
   * codes, throttles it past the queue's deadline with one, or does not answer, is not tried again
   * for it and the next one is; when none is left, the last route's outcome stands, as with a
   * single route. A message with a part acknowledged by a route stays on that route.
   */
  async #submitOne(message: OutboundMessage): Promise<SubmitOutcome> {
    const tried = new Set(message.triedRoutes ?? []);
    const earlier = this.#retrying.get(message.id);
    let candidates = routeCandidates(
      this.links.map((link) => ({ name: link.route.name, prefixes: prefixesOf(link.route), priority: link.route.priority ?? 0, link })),
      message.recipient,
    );
    if (earlier && earlier.ids.some((id) => id !== undefined)) {
      candidates = candidates.filter((c) => c.name === earlier.route);
      if (candidates.length === 0) {
        this.#retrying.delete(message.id);
        return { kind: 'rejected', errorCode: SMPP_NO_RESPONSE, errorMessage: 'The route that took part of the message was removed; the rest was not sent elsewhere.', triedRoutes: [...tried] };
      }
    }
    if (candidates.length === 0) return { kind: 'rejected', ...NO_ROUTE_ERROR };
    const open = candidates.filter((c) => !tried.has(c.name));
    let waitMs: number | null = null;
    let reason = '';
    let last: { errorCode: string; errorMessage: string } | null = null;
    for (const [k, { link, name }] of open.entries()) {
      const another = k < open.length - 1;
      if (!this.#started || !link.bound) {
        waitMs = Math.min(waitMs ?? Infinity, Math.min(UNBOUND_RETRY_MAX_MS, Math.max(UNBOUND_RETRY_MS, link.retryInMs)));
        reason = `route ${name} is not bound`;
        continue;
      }
      const state: PartsState = earlier?.route === name ? earlier : { route: name, reference: this.#reference++ & 0xff, ids: [], lost: [] };
      const result = await this.#submitParts(link, message, state);
      const acknowledged = state.ids.some((id) => id !== undefined);
      const failover = link.route.failoverCodes ?? DEFAULT_FAILOVER_CODES;
      if (result.kind === 'accepted') {
        this.#retrying.delete(message.id);
        return {
          kind: 'accepted',
          carrierMessageId: result.ids[0]!,
          carrierPartIds: result.ids,
          route: { name, costPerSegment: link.route.costPerSegment ?? null },
          triedRoutes: [...tried],
        };
      }
      if (result.kind === 'refused') {
        this.#retrying.delete(message.id);
        tried.add(name);
        last = submitErrorFor(result.status);
        if (!acknowledged && another && failover.includes(result.status)) {
          this.log.info({ messageId: message.id, route: name, status: result.status }, 'smpp route refused the message; trying the next route');
          continue;
        }
        return { kind: 'rejected', ...last, triedRoutes: [...tried] };
      }
      if (result.kind === 'lost') {
        if (!acknowledged && another) {
          // No answer in time: the next route takes it, and this one never gets it again.
          this.#retrying.delete(message.id);
          tried.add(name);
          last = NO_RESPONSE_ERROR;
          this.log.warn({ messageId: message.id, route: name }, 'smpp route did not answer; trying the next route');
          continue;
        }
        if (result.twice) {
          // Written twice without an answer: a third copy could reach the handset a third time.
          this.#retrying.delete(message.id);
          tried.add(name);
          this.log.warn({ messageId: message.id, route: name }, 'smpp submit unanswered twice; the message fails');
          return { kind: 'rejected', ...NO_RESPONSE_ERROR, triedRoutes: [...tried] };
        }
        this.#retrying.set(message.id, state);
        return { kind: 'retry', delayMs: UNBOUND_RETRY_MS, reason: result.reason, triedRoutes: [...tried] };
      }
      // Not written (the link went down first, or the SMSC kept throttling).
      if (!acknowledged && another && result.status !== undefined && failover.includes(result.status)) {
        this.#retrying.delete(message.id);
        tried.add(name);
        last = submitErrorFor(result.status);
        continue;
      }
      if (acknowledged || state.lost.some(Boolean)) {
        this.#retrying.set(message.id, state);
        return { kind: 'retry', delayMs: UNBOUND_RETRY_MS, reason: result.reason, triedRoutes: [...tried] };
      }
      waitMs = Math.min(waitMs ?? Infinity, UNBOUND_RETRY_MS);
      reason = result.reason;
    }
    if (waitMs !== null) return { kind: 'retry', delayMs: waitMs, reason, triedRoutes: [...tried] };
    return { kind: 'rejected', ...(last ?? { errorCode: 'no_route', errorMessage: 'Every route that serves this recipient was tried.' }), triedRoutes: [...tried] };
  }

  /**
   * One part at a time, in order, over one bind: a part the SMSC throttles is resent before any
   * later part of its message goes out, and a dropped link leaves no later part in doubt.
   */
  async #submitParts(link: SmppLink, message: OutboundMessage, state: PartsState): Promise<PartsResult> {
    const parts = buildSubmitParts(message, state.reference, this.clock());
    if (parts.length !== message.segments) {
      this.log.warn({ messageId: message.id, segments: message.segments, parts: parts.length }, 'smpp part count differs from the segments charged');
    }
    if (state.ids.length === 0) {
      state.ids = new Array<string | undefined>(parts.length);
      state.lost = new Array<boolean>(parts.length).fill(false);
    }
    for (const [i, fields] of parts.entries()) {
      if (state.ids[i] !== undefined) continue;
      const result = await link.submit(fields);
      if (result.kind === 'ok') {
        state.ids[i] = result.messageId;
        continue;
      }
      if (result.kind === 'error') return { kind: 'refused', status: result.status };
      if (result.kind === 'lost') {
        const twice = state.lost[i] === true;
        state.lost[i] = true;
        return { kind: 'lost', reason: result.reason, twice };
      }
      return { kind: 'retry', reason: result.reason, ...(result.status !== undefined ? { status: result.status } : {}) };
    }
    return { kind: 'accepted', ids: state.ids as string[] };
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
    if (this.links.length === 0) return { ready: false, detail: 'smpp: no routes (add one with pigeon route add)' };
    const down = this.links.filter((l) => !l.bound);
    if (down.length === 0) return { ready: true, detail: `smpp: ${this.links.length} route(s) bound` };
    const detail = down
      .map((l) => `route ${l.route.name} unbound${l.lastError ? ` (${l.lastError})` : ''}${l.retryInMs > 0 ? `, retry in ${Math.ceil(l.retryInMs / 1000)} s` : ''}`)
      .join('; ');
    return { ready: false, detail: `smpp: ${detail}`, failed: down.every((l) => l.lastError !== null) };
  }

  async close(): Promise<void> {
    await Promise.all([...this.links.map((l) => l.close()), ...this.#closing]);
  }
}
