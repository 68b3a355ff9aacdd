/**
 * Sends what waits in the outbox (receipts, inbound messages) to the receiver and transceiver
 * binds of its SMPP user in this process: round robin, at most DELIVER_WINDOW unanswered per bind.
 * A delivery is held in the database while it is out; answered 0 it is removed, a temporary
 * refusal (0x58, 0x14, 0x08) makes it due again after a back-off, no answer makes it due again
 * when its hold ends, a link that closes before the answer makes it due again at once (the ESME
 * rebinding, or another of its binds, takes it), any other answer removes it with a line in the log.
 *
 * Answers come many to a network read. Those of one turn of the event loop are settled together:
 * one statement removes every answered row, and each user's binds are refilled once for all the
 * room they made, rather than a removal and a take for each answer. An answered row is still held
 * while it waits for its removal, so it is never sent twice by this process; one whose removal a
 * crash prevents is sent again when its hold ends, as one whose answer was lost would be.
 *
 * Each user's next window (one per receiving bind) is taken ahead, held in the database like the
 * ones out on the binds, and kept here in order: an answer's slot gets the next delivery at once,
 * in the turn the answer came, so the binds' rate is not one database round trip per window (on
 * PostgreSQL, under load, that round trip was what capped receipts). A row taken ahead is sent
 * only within a tenth of its hold (the answer's timeout), so its hold still covers nearly all the
 * wait for its answer; one that waited longer (the binds answering slowly) is released, due again
 * at once, and taken again in its order, as is what is still ahead when the user's last receiving
 * bind here goes.
 */
import type { Context } from '../services/context.ts';
import {
  deliveriesAnswered,
  deliveriesReleased,
  deliveryRefusedForNow,
  enqueuePartsRejections,
  sweepExpiredDeliveries,
  takeDeliveries,
  type Delivery,
  type PartsRejection,
} from '../services/smpp-access/smpp-outbox.ts';
import { STATUS } from './pdu.ts';
import { DELIVER_WINDOW, type BindsOfProcess, type DeliverAnswer } from './session-host.ts';

const TEMPORARY = new Set<number>([STATUS.RTHROTTLED, STATUS.RMSGQFUL, STATUS.RSYSERR]);
const SWEEP_EVERY_MS = 60_000;

export class OutboxPump {
  readonly #pumping = new Set<string>();
  readonly #again = new Set<string>();
  readonly #turn = new Map<string, number>();
  /** Answered this turn of the event loop: rows to remove, users whose binds have room again. */
  #answeredIds: string[] = [];
  /** Out on a link that closed before answering: due again now. */
  #releasedIds: string[] = [];
  /** The users those belong to: refilled once they are due again, so that they go in their order. */
  #releasedFor = new Set<string>();
  readonly #roomFor = new Set<string>();
  /** Per user, the deliveries taken ahead of room on its binds, oldest first, with when they were taken. */
  readonly #ahead = new Map<string, { delivery: Delivery; takenAt: number }[]>();
  #settling: NodeJS.Immediate | null = null;
  #lastSweep = 0;

  constructor(
    private readonly ctx: Context,
    private readonly server: BindsOfProcess,
    private readonly options: { responseTimeoutMs: number },
  ) {}

  /** Every user with a receiving bind here; the periodic tick calls it, and sweeps expired rows. */
  async pumpAll(): Promise<void> {
    const now = this.ctx.clock();
    if (now - this.#lastSweep >= SWEEP_EVERY_MS) {
      this.#lastSweep = now;
      const swept = await sweepExpiredDeliveries(this.ctx);
      if (swept > 0) this.ctx.log.warn({ swept }, 'smpp: receipts and inbound messages expired before a receiver bound');
    }
    const users = new Set(this.server.boundSessions().filter((s) => s.receives).map((s) => s.user!.system_id));
    for (const systemId of this.#ahead.keys()) if (!users.has(systemId)) this.#releaseAhead(systemId);
    await Promise.all([...users].map((u) => this.#run(u)));
  }

  pump(systemId: string): void {
    void this.#run(systemId);
  }

  async #run(systemId: string): Promise<void> {
    if (this.#pumping.has(systemId)) {
      this.#again.add(systemId);
      return;
    }
    this.#pumping.add(systemId);
    try {
      do {
        this.#again.delete(systemId);
        await this.#fill(systemId);
      } while (this.#again.has(systemId));
    } catch (err) {
      this.ctx.log.warn({ err, system_id: systemId }, 'smpp: could not deliver from the outbox');
    } finally {
      this.#pumping.delete(systemId);
    }
  }

  async #fill(systemId: string): Promise<void> {
    for (;;) {
      const sessions = this.server.boundSessions(systemId).filter((s) => s.receives);
      if (sessions.length === 0) {
        this.#releaseAhead(systemId);
        return;
      }
      this.#sendAhead(systemId);
      const room = sessions.reduce((n, s) => n + Math.max(0, DELIVER_WINDOW - s.deliveriesInFlight), 0);
      const wanted = room + sessions.length * DELIVER_WINDOW - (this.#ahead.get(systemId)?.length ?? 0);
      if (wanted <= 0) return;
      const deliveries = await takeDeliveries(this.ctx, systemId, this.options.responseTimeoutMs, wanted);
      if (deliveries.length === 0) return;
      const takenAt = this.ctx.clock();
      let ahead = this.#ahead.get(systemId);
      if (!ahead) this.#ahead.set(systemId, (ahead = []));
      for (const delivery of deliveries) ahead.push({ delivery, takenAt });
      this.#sendAhead(systemId);
      if (deliveries.length < wanted) return;
    }
  }

  /** Sends what was taken ahead into the room on the user's binds, round robin, in order. */
  #sendAhead(systemId: string): void {
    const ahead = this.#ahead.get(systemId);
    if (!ahead || ahead.length === 0) return;
    const open = this.server.boundSessions(systemId).filter((s) => s.receives && s.deliveriesInFlight < DELIVER_WINDOW);
    let turn = this.#turn.get(systemId) ?? 0;
    const now = this.ctx.clock();
    while (ahead.length > 0 && open.length > 0) {
      if (now - ahead[0]!.takenAt > this.options.responseTimeoutMs / 10) {
        this.#releaseAhead(systemId);
        return;
      }
      const { delivery } = ahead.shift()!;
      const i = turn++ % open.length;
      const session = open[i]!;
      session.deliver(delivery.fields, (status) => void this.#answered(systemId, delivery, status));
      if (session.deliveriesInFlight >= DELIVER_WINDOW) {
        open.splice(i, 1);
        turn = i;
      }
    }
    this.#turn.set(systemId, turn);
    if (ahead.length === 0) this.#ahead.delete(systemId);
  }

  /** What was taken ahead for the user is due again now (no receiving bind here any more, or it waited too long). */
  #releaseAhead(systemId: string): void {
    const ahead = this.#ahead.get(systemId);
    if (!ahead) return;
    this.#ahead.delete(systemId);
    for (const { delivery } of ahead) this.#releasedIds.push(delivery.id);
    this.#releasedFor.add(systemId);
    this.#settling ??= setImmediate(() => void this.#settle());
  }

  async #answered(systemId: string, delivery: Delivery, status: DeliverAnswer): Promise<void> {
    try {
      if (status === null) {
        // No answer: the row stays held until its hold ends, then it is due again.
      } else if (status === 'gone') {
        this.#releasedIds.push(delivery.id);
        this.#releasedFor.add(systemId);
      } else if (status === STATUS.ROK) {
        this.#answeredIds.push(delivery.id);
      } else if (TEMPORARY.has(status)) {
        await deliveryRefusedForNow(this.ctx, delivery);
      } else {
        this.ctx.log.warn({ system_id: systemId, status: `0x${status.toString(16).padStart(8, '0')}` }, 'smpp: deliver_sm refused for good; dropped');
        this.#answeredIds.push(delivery.id);
      }
    } catch (err) {
      this.ctx.log.warn({ err, system_id: systemId }, 'smpp: could not record a deliver_sm answer');
    }
    // The slot is filled from what was taken ahead now; the database refills that in the settling.
    this.#sendAhead(systemId);
    this.#roomFor.add(systemId);
    this.#settling ??= setImmediate(() => void this.#settle());
  }

  async #settle(): Promise<void> {
    this.#settling = null;
    const ids = this.#answeredIds;
    const released = this.#releasedIds;
    const releasedFor = this.#releasedFor;
    const users = [...this.#roomFor].filter((u) => !releasedFor.has(u));
    this.#answeredIds = [];
    this.#releasedIds = [];
    this.#releasedFor = new Set();
    this.#roomFor.clear();
    // The refill does not wait for the removal: answered rows stay held until it, so no take can
    // return them. A user with released rows is refilled once they are due again, so that they
    // go before anything newer. Either statement failing leaves its rows held: each is sent again
    // when its hold ends.
    for (const systemId of users) this.pump(systemId);
    await Promise.all([
      deliveriesAnswered(this.ctx, ids).catch((err: unknown) => this.ctx.log.warn({ err, deliveries: ids.length }, 'smpp: could not remove answered deliveries')),
      released.length === 0
        ? undefined
        : deliveriesReleased(this.ctx, released)
            .catch((err: unknown) => this.ctx.log.warn({ err, deliveries: released.length }, 'smpp: could not release deliveries of a closed link'))
            .then(() => {
              for (const systemId of releasedFor) this.pump(systemId);
            }),
    ]);
  }
}
