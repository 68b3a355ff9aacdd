import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

/**
 * SMPP routes managed while Pigeon runs (DECISIONS.md §11, docs/pricing-and-routing.md).
 *
 * - `smpp_routes`: one row per route. The password is kept as given, since binding needs it.
 *   `prefixes` and `failover_codes` are comma-separated (`+44,+353`; `8,20,69,88`).
 * - `route_revision`: one counter that triggers move in the transaction of any change to
 *   `smpp_routes`, whichever process makes it, so a worker reads one row to know whether its
 *   links are current (as `access_revision` does for keys and Sender IDs).
 * - `smpp_route_links`: each worker process's links as it last saw them, refreshed every second,
 *   so that the CLI and the console, which hold no sockets, can say which routes are bound.
 * - `messages.route`: the route that took the message; `route_cost`: the carrier's charge for it
 *   (segments × the route's cost_per_segment at that moment), so a later change of the cost does
 *   not rewrite the margin of the past; `routes_tried`: routes that refused it or did not answer,
 *   never tried again for it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('smpp_routes')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('prefixes', 'text', (c) => c.notNull())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('port', 'integer', (c) => c.notNull())
    .addColumn('system_id', 'text', (c) => c.notNull())
    .addColumn('password', 'text', (c) => c.notNull())
    .addColumn('system_type', 'text', (c) => c.notNull())
    .addColumn('tps', 'integer', (c) => c.notNull())
    .addColumn('window_size', 'integer', (c) => c.notNull())
    .addColumn('priority', 'integer', (c) => c.notNull())
    .addColumn('cost_per_segment', 'integer')
    .addColumn('failover_codes', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('route_revision')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('value', 'bigint', (c) => c.notNull())
    .execute();
  await sql`insert into route_revision (id, value) values (1, 0)`.execute(db);
  const bump = 'update route_revision set value = value + 1 where id = 1';
  if (dialectOf(db) === 'postgres') {
    await sql.raw(`create function pigeon_bump_route_revision() returns trigger language plpgsql as $$ begin ${bump}; return null; end $$`).execute(db);
    await sql.raw('create trigger smpp_routes_revision after insert or update or delete on smpp_routes for each statement execute function pigeon_bump_route_revision()').execute(db);
  } else {
    for (const event of ['insert', 'update', 'delete']) {
      await sql.raw(`create trigger smpp_routes_revision_${event} after ${event} on smpp_routes begin ${bump}; end`).execute(db);
    }
  }

  await db.schema
    .createTable('smpp_route_links')
    .addColumn('process', 'text', (c) => c.notNull())
    .addColumn('route', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('seen_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('smpp_route_links_pk', ['process', 'route'])
    .execute();

  await db.schema.alterTable('messages').addColumn('route', 'text').execute();
  await db.schema.alterTable('messages').addColumn('route_cost', 'bigint').execute();
  await db.schema.alterTable('messages').addColumn('routes_tried', 'text').execute();
  // The margin report reads the messages a route took, by the day it took them.
  await db.schema.createIndex('messages_route_sent').on('messages').columns(['sent_at', 'route']).where(sql.ref('route'), 'is not', null).execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
