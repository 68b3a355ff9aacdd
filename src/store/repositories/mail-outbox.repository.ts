/** Rows of `mail_outbox`: every mail to send, held or sent, with its attempts. */
import type { Executor } from '../connect.ts';
import type { MailOutboxTable, MailStatus } from '../database.ts';

export async function insertMails(db: Executor, rows: MailOutboxTable[]): Promise<void> {
  for (const row of rows) await db.insertInto('mail_outbox').values(row).execute();
}

export async function findMail(db: Executor, id: string): Promise<MailOutboxTable | undefined> {
  return db.selectFrom('mail_outbox').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Records what became of a mail (held, sent, or another failed attempt). */
export async function updateMail(
  db: Executor,
  id: string,
  change: { status: MailStatus; attempts?: number; sent_at?: number; last_error?: string | null },
): Promise<void> {
  await db.updateTable('mail_outbox').set(change).where('id', '=', id).execute();
}

/** The outbox, newest first. */
export async function listMails(db: Executor, limit: number): Promise<MailOutboxTable[]> {
  return db.selectFrom('mail_outbox').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}
