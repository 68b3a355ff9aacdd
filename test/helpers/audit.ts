/**
 * The audit log as tests read it: the records of one action straight from the store (oldest
 * first, `changes` parsed), and the whole log as one text to search for what must never be in it.
 */
import type { Harness } from './harness.ts';

export interface StoredAuditEvent {
  action: string;
  account_id: string | null;
  actor_type: string;
  actor_id: string | null;
  actor_email: string | null;
  target_type: string | null;
  target_id: string | null;
  ip: string | null;
  changes: Record<string, [unknown, unknown]>;
}

export async function auditRecords(h: Harness, action: string): Promise<StoredAuditEvent[]> {
  const rows = await h.ctx.store.db.selectFrom('audit_events').selectAll().where('action', '=', action).orderBy('at').orderBy('id').execute();
  return rows.map((r) => ({ ...r, changes: JSON.parse(r.changes) as StoredAuditEvent['changes'] }));
}

/** Every record, as one text: a secret, a code or a recovery code must not be found in it. */
export async function wholeAuditLog(h: Harness): Promise<string> {
  return JSON.stringify(await h.ctx.store.db.selectFrom('audit_events').selectAll().execute());
}
