/**
 * Every send looks up its API key (with the account's status) and its Sender ID. Both change
 * rarely, yet reading them costs more than the rest of the request's storage work, so each
 * process keeps what it has read, and trusts it exactly as long as the database's access revision
 * stands still: triggers move that counter in the same transaction as any change to a key, an
 * account's status or a Sender ID (migration 006). Each lookup first reads the counter, one row
 * on a warm page; a changed value empties the cache before anything is read from it, so a
 * revocation or suspension made by any process, the CLI included, applies to the next request
 * everywhere, exactly as without a cache.
 *
 * An entry is stored under the revision read before its row was loaded, never a later one, so a
 * change that lands between the two reads can only make the entry look older than it is.
 */
import type { Store } from '../store/connect.ts';
import { preparedRead } from '../store/prepared-statements.ts';

/** Per map: past this many entries the map starts again empty (unknown Sender IDs are cached too). */
const MAX_ENTRIES = 10_000;

const revisionRow = preparedRead((db, id: number) => db.selectFrom('access_revision').select('value').where('id', '=', id));

export class AccessSnapshot {
  readonly #maps = new Map<string, Map<string, unknown>>();
  constructor(readonly revision: number) {}

  /** The cached value for `key` in `space`, or `load()`'s result, remembered unless undefined. */
  async get<V>(space: string, key: string, load: () => Promise<V>): Promise<V> {
    let map = this.#maps.get(space);
    if (!map) {
      map = new Map();
      this.#maps.set(space, map);
    }
    if (map.has(key)) return map.get(key) as V;
    const value = await load();
    if (value === undefined) return value;
    if (map.size >= MAX_ENTRIES) map.clear();
    map.set(key, value);
    return value;
  }
}

const snapshots = new WeakMap<Store, AccessSnapshot>();

/** The cache for the store's current access revision (read now), emptied if it moved. */
export async function accessSnapshot(store: Store): Promise<AccessSnapshot> {
  const row = await revisionRow(store, 1);
  const revision = Number(row?.value ?? 0);
  let snapshot = snapshots.get(store);
  if (!snapshot || snapshot.revision !== revision) {
    snapshot = new AccessSnapshot(revision);
    snapshots.set(store, snapshot);
  }
  return snapshot;
}
