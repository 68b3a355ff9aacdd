/**
 * The embedded carrier of DECISIONS.md §6, chosen by the recipient's last four digits:
 * `0000` is sent then fails (`subscriber_unreachable`), `1111` is sent and never gets a receipt,
 * `2222` is refused at submit (`carrier_rejected`), anything else is delivered. The receipt is due
 * `SIM_DELIVERY_DELAY_MS` after dispatch. A message with a validity period that ends before its
 * receipt would come (or a `1111` one, whose receipt never comes) gets a `failed` receipt with
 * `expired` when the period ends, as a network that gave up on it would send.
 */
import { appendFileSync } from 'node:fs';
import type { Carrier, CarrierStatus, DeliveryReport, OutboundMessage, SubmitOutcome } from '../carrier.ts';
import type { Clock } from '../../util/ids.ts';

export type SimulatedOutcome = 'delivered' | 'failed' | 'no_receipt' | 'rejected';

export function simulatedOutcome(recipient: string): SimulatedOutcome {
  switch (recipient.slice(-4)) {
    case '0000':
      return 'failed';
    case '1111':
      return 'no_receipt';
    case '2222':
      return 'rejected';
    default:
      return 'delivered';
  }
}

export class SimulatorCarrier implements Carrier {
  readonly name = 'simulator';
  /** Every message id the simulator has been handed, with a count (tests check "exactly once"). */
  readonly submitted = new Map<string, number>();

  constructor(
    private readonly deliveryDelayMs: number,
    private readonly clock: Clock,
    private readonly recordSubmissions = false,
    private readonly logFile: string | null = null,
  ) {}

  async submit(messages: OutboundMessage[]): Promise<SubmitOutcome[]> {
    const now = this.clock();
    // Written synchronously before answering, so a process killed right after still left its
    // record: the multi-process test counts each message's submissions across workers from it.
    if (this.logFile && messages.length > 0) appendFileSync(this.logFile, messages.map((m) => `${m.id}\n`).join(''));
    return messages.map((m): SubmitOutcome => {
      if (this.recordSubmissions) this.submitted.set(m.id, (this.submitted.get(m.id) ?? 0) + 1);
      // The simulator uses Pigeon's id as its own, which makes resubmission after a lost
      // acknowledgement idempotent on the carrier side.
      const outcome = simulatedOutcome(m.recipient);
      if (outcome === 'rejected') {
        return { kind: 'rejected', errorCode: 'carrier_rejected', errorMessage: 'The carrier refused the message.' };
      }
      const dueAt = now + this.deliveryDelayMs;
      if (m.validUntil !== undefined && (outcome === 'no_receipt' || dueAt > m.validUntil)) {
        const at = Math.max(now, m.validUntil);
        const expired: DeliveryReport = {
          carrierMessageId: m.id,
          byMessageId: true,
          status: 'failed',
          errorCode: 'expired',
          errorMessage: 'The validity period ended before the message could be delivered.',
          at,
        };
        return { kind: 'accepted', carrierMessageId: m.id, scheduledReport: { ...expired, dueAt: at } };
      }
      if (outcome === 'no_receipt') return { kind: 'accepted', carrierMessageId: m.id };
      const report: DeliveryReport =
        outcome === 'delivered'
          ? { carrierMessageId: m.id, byMessageId: true, status: 'delivered', at: dueAt }
          : {
              carrierMessageId: m.id,
              byMessageId: true,
              status: 'failed',
              errorCode: 'subscriber_unreachable',
              errorMessage: 'The subscriber is unreachable or the SIM is inactive.',
              at: dueAt,
            };
      return { kind: 'accepted', carrierMessageId: m.id, scheduledReport: { ...report, dueAt } };
    });
  }

  onDeliveryReport(_handler: (report: DeliveryReport) => Promise<void>): void {
    // Every simulated receipt is scheduled at submit time (see SubmitOutcome.scheduledReport).
  }

  status(): CarrierStatus {
    return { ready: true, detail: 'simulator' };
  }

  async close(): Promise<void> {}
}
