/**
 * What an SMPP session and the outbox pump need of each other and of the server, as types of
 * their own: the server holds the sessions and the pump, the sessions ask the server to bind and
 * the pump to deliver, and none of the three modules imports another one that imports it back.
 */
import type { Context } from '../services/context.ts';
import type { BindRecord } from '../services/smpp-access/smpp-binds.ts';
import type { DeliverFields } from '../services/smpp-access/smpp-outbox.ts';
import type { PartsAssembler } from '../services/smpp-access/smpp-parts.ts';
import type { BindDecision, SmppUser } from '../services/smpp-access/smpp-users.ts';
import type { RateLimitStore } from '../services/rate-limit/rate-limit.ts';

/** deliver_sm sent and not yet answered, per bind. */
export const DELIVER_WINDOW = 10;

/** A deliver_sm's outcome: the answer's command_status, null for none in time, 'gone' for a link closed first. */
export type DeliverAnswer = number | null | 'gone';

/** A bind as the outbox pump sees it: whether it receives, its room, and how to send it a deliver_sm. */
export interface ReceivingBind {
  readonly user: SmppUser | null;
  readonly receives: boolean;
  readonly deliveriesInFlight: number;
  deliver(fields: DeliverFields, done: (status: DeliverAnswer) => void): void;
}

/** The binds of this process, for the outbox pump. */
export interface BindsOfProcess {
  boundSessions(systemId?: string): ReceivingBind[];
}

/** The server as a session sees it (src/smpp-server/smpp-server.ts). */
export interface SessionHost {
  readonly ctx: Context;
  readonly parts: PartsAssembler;
  readonly rateLimits: RateLimitStore;
  readonly outbox: { pump(systemId: string): void };
  bind(systemId: string, decide: () => Promise<BindDecision>, record: (d: BindDecision) => Promise<void>): Promise<BindDecision>;
  decideBind(systemId: string, password: string, address: string): Promise<BindDecision>;
  recordBind(session: { bindRecord(): BindRecord }): Promise<void>;
  forgetBind(id: string): Promise<void>;
  takeToken(systemId: string, tps: number): boolean;
}
