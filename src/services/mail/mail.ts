/**
 * E-mail to account owners. Every mail is a row of `mail_outbox` plus a `mail` job written in one
 * transaction; the mail worker sends it through nodemailer to SMTP_URL, retrying with backoff, or,
 * without SMTP_URL, marks it `held` so that the operator reads it in the dashboard's outbox.
 * Whoever asks for a mail only writes rows, so a mail server's trouble never blocks them.
 */
import { createRequire } from 'node:module';
import type { Transporter } from 'nodemailer';
import { retryDelay, schedule, type RetryPolicy } from '../../domain/retry-policy.ts';
import type { JobsTable, MailOutboxTable, SenderIdsTable } from '../../store/database.ts';
import { deleteJobs, enqueueJobs, rescheduleJob } from '../../store/repositories/jobs.repository.ts';
import { findMail, insertMails, listMails, updateMail } from '../../store/repositories/mail-outbox.repository.ts';
import { newId } from '../../util/ids.ts';
import type { Context } from '../context.ts';
import { accountEmails } from './account-emails.ts';
import { onSenderIdReview } from '../sender-ids/sender-ids.ts';

/** Waits before each retry; after the last, the mail is marked `failed`. */
export const MAIL_RETRY_DELAYS_MS = [30_000, 120_000, 600_000, 1_800_000, 7_200_000];
/** The mail's retry policy: sent at once, then the waits above, exact. */
const MAIL_RETRY: RetryPolicy = schedule([0, ...MAIL_RETRY_DELAYS_MS]);

/** A mail of the outbox, as the operator console shows it. */
export type OutboxMail = MailOutboxTable;

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export async function enqueueMail(ctx: Context, mails: Mail[]): Promise<MailOutboxTable[]> {
  if (mails.length === 0) return [];
  const now = ctx.clock();
  const rows: MailOutboxTable[] = mails.map((m) => ({
    id: newId('mail', now),
    to_address: m.to,
    subject: m.subject,
    body_text: m.text,
    status: 'queued',
    attempts: 0,
    last_error: null,
    created_at: now,
    sent_at: null,
  }));
  await ctx.store.db.transaction().execute(async (trx) => {
    await insertMails(trx, rows);
    await enqueueJobs(trx, rows.map((r) => ({ queue: 'mail', ref: r.id, runAt: now })), now);
  });
  ctx.wake('mail');
  return rows;
}

const transports = new Map<string, Transporter>();
const require = createRequire(import.meta.url);

function transportFor(url: string): Transporter {
  let t = transports.get(url);
  // nodemailer is loaded by the first mail sent, not by every process that might send one.
  const nodemailer = require('nodemailer') as typeof import('nodemailer');
  if (!t) transports.set(url, (t = nodemailer.createTransport(url)));
  return t;
}

/** The mail worker's handler: send (or hold) each mail, reschedule failures. */
export async function sendMailJobs(ctx: Context, jobs: JobsTable[]): Promise<void> {
  for (const job of jobs) {
    const mail = await findMail(ctx.store.db, job.ref);
    if (!mail || mail.status !== 'queued') {
      await deleteJobs(ctx.store.db, [job.id]);
      continue;
    }
    if (!ctx.config.smtpUrl) {
      await updateMail(ctx.store.db, mail.id, { status: 'held' });
      await deleteJobs(ctx.store.db, [job.id]);
      ctx.log.info({ mailId: mail.id, to: mail.to_address, subject: mail.subject }, 'mail held in the outbox (no SMTP_URL)');
      continue;
    }
    const attempts = mail.attempts + 1;
    try {
      await transportFor(ctx.config.smtpUrl).sendMail({ from: ctx.config.mailFrom, to: mail.to_address, subject: mail.subject, text: mail.body_text });
      await updateMail(ctx.store.db, mail.id, { status: 'sent', attempts, sent_at: ctx.clock(), last_error: null });
      await deleteJobs(ctx.store.db, [job.id]);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const delay = retryDelay(MAIL_RETRY, attempts);
      const status = delay === null ? 'failed' : 'queued';
      await updateMail(ctx.store.db, mail.id, { status, attempts, last_error: message.slice(0, 500) });
      if (delay === null) await deleteJobs(ctx.store.db, [job.id]);
      else await rescheduleJob(ctx.store.db, job.id, ctx.clock() + delay);
      ctx.log.warn({ mailId: mail.id, attempts, err: message }, status === 'failed' ? 'mail failed for good' : 'mail failed; will retry');
    }
  }
}

/** The outbox, newest first, for the operator. */
export async function listOutbox(ctx: Context, limit = 100): Promise<OutboxMail[]> {
  return listMails(ctx.store.db, limit);
}

/** The mail an owner receives about a review decision. */
export function reviewMail(record: SenderIdsTable, decision: 'approved' | 'rejected' | 'info_requested', publicUrl: string): Omit<Mail, 'to'> {
  const link = `${publicUrl}/dashboard/sender-ids`;
  switch (decision) {
    case 'approved':
      return { subject: `Sender ID ${record.name} approved`, text: `Your Sender ID ${record.name} has been approved; you can now send messages from it.\n\n${link}\n` };
    case 'rejected':
      return { subject: `Sender ID ${record.name} rejected`, text: `Your Sender ID ${record.name} has been rejected.\n\nReason: ${record.review_note ?? ''}\n\n${link}\n` };
    case 'info_requested':
      return {
        subject: `Sender ID ${record.name}: more information needed`,
        text: `We need more information to review your Sender ID ${record.name}.\n\n${record.review_note ?? ''}\n\nReply to this e-mail or upload documents in the dashboard:\n${link}\n`,
      };
  }
}

let installed = false;

/** Mails the owners on every Sender ID decision. Safe to call more than once. */
export function installReviewMail(): void {
  if (installed) return;
  installed = true;
  onSenderIdReview(async (ctx, record, decision) => {
    const content = reviewMail(record, decision, ctx.config.publicUrl);
    const to = await accountEmails(ctx, record.account_id);
    await enqueueMail(ctx, to.map((address) => ({ to: address, ...content })));
  });
}
