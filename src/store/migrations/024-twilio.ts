import type { Kysely } from 'kysely';

/**
 * The Twilio-compatible Messages API (DECISIONS.md §12).
 *
 * - `accounts.twilio_sid`: the Account SID (`AC` and 32 hex digits), made when the account's
 *   credentials are first asked for, unique (Basic auth finds the account by it).
 * - `accounts.twilio_token`: the Auth Token. It is the HMAC key of `X-Twilio-Signature`, so Pigeon
 *   must hold it in clear, as it holds the webhook signing secret, in `accounts` and nowhere else.
 *   `twilio_token_previous` keeps working for 24 hours after `twilio_token_rotated_at`.
 * - `messages.callback_format`: `twilio` when the message's callback URL receives Twilio's
 *   form-encoded status callbacks instead of Pigeon's JSON events; null otherwise.
 * - `numbers.sms_url`: where messages to the number are POSTed Twilio-style (TwiML answers).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('twilio_sid', 'text').execute();
  await db.schema.alterTable('accounts').addColumn('twilio_token', 'text').execute();
  await db.schema.alterTable('accounts').addColumn('twilio_token_previous', 'text').execute();
  await db.schema.alterTable('accounts').addColumn('twilio_token_rotated_at', 'bigint').execute();
  await db.schema.createIndex('accounts_twilio_sid').unique().on('accounts').column('twilio_sid').execute();
  await db.schema.alterTable('messages').addColumn('callback_format', 'text').execute();
  await db.schema.alterTable('numbers').addColumn('sms_url', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
