import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

/**
 * Two-way messaging (DECISIONS.md §8).
 *
 * - `numbers`: the phone numbers (E.164, or a short code of digits) the operator assigns to an
 *   account. A number belongs to at most one account: it is the primary key. An account may send
 *   from its numbers, so assigning or releasing one moves the access revision (migration 006),
 *   like a Sender ID change, and every process sees it at its next send.
 * - `accounts.events_url`: where the account's own events go (inbound messages, opt-outs), which
 *   belong to no send request; `accounts.help_text`: the reply to HELP (null: the default text).
 * - `webhook_events.message_id` becomes nullable and `inbound_id` names the inbound message of an
 *   account event. SQLite cannot drop a NOT NULL, so there the table is rebuilt with its indexes.
 * - `inbound_messages`: what carriers delivered to a number. `account_id` is null for a number no
 *   account holds (unrouted, kept for the operator). `incomplete` is 1 when a multi-part message
 *   was stored with the parts that came before its reassembly timed out.
 * - `inbound_parts`: the parts of a multi-part inbound message stored as they come (so the carrier
 *   can be answered at once without risk of losing them), until the last part completes it or
 *   60 s pass; then they become one inbound message in one transaction.
 * - `opt_outs`: recipients who opted out of an account (STOP, the API, the operator). Sends read
 *   them with the rest of the access check (src/services/auth/access.ts), so a change moves the
 *   access revision too. `opt_out_replies` counts the confirmations sent per number, recipient and
 *   UTC day (at most 5). `messages.charged` is 0 for those confirmations: sent free, never refunded,
 *   never refused at dispatch.
 * - The scopes added with two-way messaging go to every existing key that holds all five original
 *   ones (a key created without a scope list had them all, and still has them all).
 */
const NEW_SCOPES = ['numbers:read', 'inbound:read', 'opt_outs:read', 'opt_outs:write', 'account:write'];
const ORIGINAL_SCOPES = ['sms:send', 'sender_ids:read', 'sender_ids:write', 'reports:read', 'account:read'];

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('numbers')
    .addColumn('number', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('label', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('numbers_account').on('numbers').columns(['account_id', 'created_at']).execute();

  const bump = 'update access_revision set value = value + 1 where id = 1';
  if (dialectOf(db) === 'postgres') {
    // pigeon_bump_access_revision() comes from migration 006.
    await sql
      .raw('create trigger numbers_access_revision after insert or delete or update of number, account_id on numbers for each statement execute function pigeon_bump_access_revision()')
      .execute(db);
  } else {
    for (const event of ['insert', 'delete', 'update of number, account_id']) {
      await sql.raw(`create trigger numbers_access_${event.split(' ')[0]} after ${event} on numbers begin ${bump}; end`).execute(db);
    }
  }

  await db.schema.alterTable('accounts').addColumn('events_url', 'text').execute();
  await db.schema.alterTable('accounts').addColumn('help_text', 'text').execute();

  if (dialectOf(db) === 'postgres') {
    await sql`alter table webhook_events alter column message_id drop not null`.execute(db);
    await sql`alter table webhook_events add column inbound_id text`.execute(db);
  } else {
    await db.schema
      .createTable('webhook_events_new')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
      .addColumn('message_id', 'text')
      .addColumn('batch_id', 'text')
      .addColumn('event', 'text', (c) => c.notNull())
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('last_error', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addColumn('inbound_id', 'text')
      .execute();
    const columns = 'id, account_id, message_id, batch_id, event, url, payload, status, attempts, last_error, created_at, updated_at';
    await sql.raw(`insert into webhook_events_new (${columns}) select ${columns} from webhook_events`).execute(db);
    await sql`drop table webhook_events`.execute(db);
    await sql`alter table webhook_events_new rename to webhook_events`.execute(db);
    await db.schema.createIndex('webhook_events_account_created').on('webhook_events').columns(['account_id', 'created_at', 'id']).execute();
    await db.schema.createIndex('webhook_events_message').on('webhook_events').columns(['message_id', 'created_at']).execute();
  }

  await db.schema
    .createTable('inbound_messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.references('accounts.id'))
    .addColumn('sender', 'text', (c) => c.notNull())
    .addColumn('recipient', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('encoding', 'text', (c) => c.notNull())
    .addColumn('segments', 'integer', (c) => c.notNull())
    .addColumn('incomplete', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('received_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('inbound_account_received').on('inbound_messages').columns(['account_id', 'received_at', 'id']).execute();
  await db.schema.createIndex('inbound_account_sender').on('inbound_messages').columns(['account_id', 'sender', 'received_at']).execute();

  await db.schema
    .createTable('inbound_parts')
    .addColumn('group_key', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('total', 'integer', (c) => c.notNull())
    .addColumn('sender', 'text', (c) => c.notNull())
    .addColumn('recipient', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('encoding', 'text', (c) => c.notNull())
    .addColumn('received_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('inbound_parts_pk', ['group_key', 'seq'])
    .execute();
  await db.schema.createIndex('inbound_parts_received').on('inbound_parts').columns(['received_at']).execute();

  await db.schema
    .createTable('opt_outs')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('phone', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('number', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('opt_outs_pk', ['account_id', 'phone'])
    .execute();
  await db.schema.createIndex('opt_outs_account_created').on('opt_outs').columns(['account_id', 'created_at']).execute();
  await db.schema
    .createTable('opt_out_replies')
    .addColumn('number', 'text', (c) => c.notNull())
    .addColumn('phone', 'text', (c) => c.notNull())
    .addColumn('day', 'integer', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('opt_out_replies_pk', ['number', 'phone', 'day'])
    .execute();
  await db.schema.alterTable('messages').addColumn('charged', 'integer', (c) => c.notNull().defaultTo(1)).execute();
  if (dialectOf(db) === 'postgres') {
    await sql
      .raw('create trigger opt_outs_access_revision after insert or delete or update on opt_outs for each statement execute function pigeon_bump_access_revision()')
      .execute(db);
  } else {
    for (const event of ['insert', 'delete', 'update']) {
      await sql.raw(`create trigger opt_outs_access_${event} after ${event} on opt_outs begin ${bump}; end`).execute(db);
    }
  }

  const { rows } = await sql<{ id: string; scopes: string }>`select id, scopes from api_keys`.execute(db);
  for (const row of rows) {
    const held = new Set(row.scopes.split(','));
    if (!ORIGINAL_SCOPES.every((s) => held.has(s))) continue;
    const scopes = [...held, ...NEW_SCOPES.filter((s) => !held.has(s))].join(',');
    if (scopes !== row.scopes) await sql`update api_keys set scopes = ${scopes} where id = ${row.id}`.execute(db);
  }
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
