import type { Kysely } from 'kysely';

/**
 * The parts of long messages submitted over SMPP (UDH or SAR), stored as they come, so that a
 * part answered with its id survives a restart and the parts of one message may reach different
 * processes (binds spread by a load balancer). `group_key` is what makes parts one message (the
 * SMPP user, the addresses, the reference and the part count); `message_id` is chosen with the
 * first part stored. A `seq` 0 row marks a group whose message was accepted or refused, written
 * in the same transaction, so a part sent again afterwards is answered with its id and nothing
 * else; done groups are removed a while later. `payload` is the part's bytes in base64.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('smpp_parts')
    .addColumn('group_key', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('total', 'integer', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('system_id', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('data_coding', 'integer', (c) => c.notNull())
    .addColumn('registered_delivery', 'integer', (c) => c.notNull())
    .addColumn('source_addr', 'text', (c) => c.notNull())
    .addColumn('source_ton', 'integer', (c) => c.notNull())
    .addColumn('destination_addr', 'text', (c) => c.notNull())
    .addColumn('received_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('smpp_parts_pk', ['group_key', 'seq'])
    .execute();
  await db.schema.createIndex('smpp_parts_received').on('smpp_parts').columns(['received_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('smpp_parts').execute();
}
