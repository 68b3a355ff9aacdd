import { openTestStore } from '../test/helpers/test-store.ts';
import { sql } from 'kysely';
const s = await openTestStore('sqlite');
const { rows } = await sql<{ type: string; name: string; tbl_name: string; sql: string }>`select type, name, tbl_name, sql from sqlite_master where tbl_name in ('messages','jobs','webhook_events','webhook_attempts','carrier_parts','smpp_outbox') order by tbl_name, type desc`.execute(s.db);
for (const r of rows) console.log(r.sql ?? `(auto) ${r.name}`);
await s.close();
