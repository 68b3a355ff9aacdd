/**
 * What every use-case needs, built once by the composition root (src/runtime.ts) or by a test.
 * Passing the clock in lets tests move time instead of sleeping.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/config.ts';
import type { Store } from '../store/connect.ts';
import type { Clock } from '../util/ids.ts';
import type { AuditActor } from '../domain/audit.ts';

export interface Context {
  store: Store;
  config: Config;
  clock: Clock;
  log: Logger;
  /** Wakes the in-process workers of a queue after a commit that enqueued work for it. */
  wake: (queue: 'dispatch' | 'receipt' | 'webhook' | 'mail' | 'schedule') => void;
  /**
   * Who is acting, for the audit log: set per request by the HTTP layer (the signed-in person or
   * the API key) and per command by the CLI (`actingAs`, src/services/audit/audit.ts). Absent in
   * the workers: their changes are Pigeon's own (`system`).
   */
  acting?: { actor: AuditActor; ip: string | null };
}
