/**
 * What Pigeon needs from a carrier connection. The simulator and the SMPP connector implement it;
 * nothing above src/carriers/ knows which one is in use, nor any protocol's status numbers.
 */
import type { SmppRouteConfig } from '../config/smpp-config.ts';
import type { Encoding } from '../domain/segmentation.ts';

export interface OutboundMessage {
  id: string;
  recipient: string;
  sender: string;
  body: string;
  encoding: Encoding;
  segments: number;
  /**
   * The end of the message's validity period (ms since the epoch), when the customer gave one:
   * the carrier should not deliver it after that. Absent: the carrier's own setting.
   */
  validUntil?: number;
  /** Routes that already refused it or did not answer (SMPP): it is not submitted to them again. */
  triedRoutes?: string[];
}

/** The route that took a message, and what its carrier charges per segment (null: not recorded). */
export interface TakenBy {
  name: string;
  costPerSegment: number | null;
}

/** A final report about a message from the carrier network. */
export interface DeliveryReport {
  /** The carrier's id for the message (as returned at submit), or Pigeon's when `byMessageId`. */
  carrierMessageId: string;
  /** Set when the carrier reports with Pigeon's own message id. */
  byMessageId?: boolean;
  /**
   * The carrier route it came over (SMPP): how that route's SMSC spells ids is learned per route,
   * so that a receipt whose id matches only through base conversion is applied at once or waits.
   */
  route?: string;
  status: 'delivered' | 'failed';
  errorCode?: string;
  errorMessage?: string;
  /** When the carrier says it happened (ms since the epoch). */
  at: number;
}

/** A message (or one part of a longer one) a handset sent to one of our numbers. */
export interface InboundCarrierMessage {
  /** The carrier route it came over. */
  route: string;
  /** The sender, E.164 where it is a phone number. */
  from: string;
  /** Our number, as the carrier addressed it. */
  to: string;
  text: string;
  /** `GSM-7`, `UCS-2`, `Latin-1` or `8-bit`. */
  encoding: string;
  /** For one part of a concatenated message: its reference, the number of parts, its place (1-based). */
  part?: { ref: number; total: number; seq: number };
}

export type SubmitOutcome =
  /** Handed to the network: the message becomes `sent`. */
  | {
      kind: 'accepted';
      carrierMessageId: string;
      /**
       * The carrier's id of each part, in order, when a message went as several (SMPP): a receipt
       * may name any of them. Stored in `carrier_parts` when the message becomes `sent`.
       */
      carrierPartIds?: string[];
      /**
       * A receipt the carrier already knows it will send, and when (the simulator's). It is stored
       * as a delayed job at once, so a crash between now and then loses nothing.
       */
      scheduledReport?: DeliveryReport & { dueAt: number };
      /** The route that took it (SMPP). */
      route?: TakenBy;
      triedRoutes?: string[];
    }
  /** Refused for good before it left: the message fails and its credits are refunded. */
  | { kind: 'rejected'; errorCode: string; errorMessage: string; triedRoutes?: string[] }
  /**
   * Not taken now (throttled, link down): try again after the delay; the message stays `pending`.
   * `triedRoutes`: the routes it must not go to again, to be remembered with the message.
   */
  | { kind: 'retry'; delayMs: number; reason: string; triedRoutes?: string[] };

/** One route's link in this process, as `pigeon route list` and the console show it. */
export interface RouteLinkState {
  route: string;
  state: string;
  lastError: string | null;
}

export interface CarrierStatus {
  ready: boolean;
  detail: string;
  /**
   * Not ready, and every connection has been tried and failed at least once: waiting longer only
   * repeats the same failure on the retry schedule (`pigeon doctor` answers from it at once).
   */
  failed?: boolean;
}

export interface Carrier {
  readonly name: string;
  /**
   * Opens the carrier's connections. Called only in processes that run workers, so that an
   * API-only process (`serve --no-workers`) never binds to the SMSC. Optional: the simulator has none.
   */
  start?(): void;
  /** Submits messages; the outcomes are in the same order. Never throws for one message's failure. */
  submit(messages: OutboundMessage[]): Promise<SubmitOutcome[]>;
  /** Registers the handler for receipts that arrive on their own (e.g. SMPP deliver_sm). */
  onDeliveryReport(handler: (report: DeliveryReport) => Promise<void>): void;
  /**
   * Registers the handler for inbound messages (SMPP deliver_sm that is not a receipt). The
   * carrier acknowledges a message only once the handler's promise resolves (it is stored).
   * Optional: the simulator's inbound messages enter through the API and the CLI instead.
   */
  onInbound?(handler: (message: InboundCarrierMessage) => Promise<void>): void;
  status(): CarrierStatus;
  close(): Promise<void>;
  /**
   * Replaces the routes (SMPP): new ones bind, removed ones unbind (what waited on them goes to
   * the remaining routes), changed addresses or credentials bind again. Optional: the simulator
   * has no routes.
   */
  setRoutes?(routes: SmppRouteConfig[]): void;
  routeLinks?(): RouteLinkState[];
}
