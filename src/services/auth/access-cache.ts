/**
 * Every send looks up its API key (with the account's status) and its Sender ID. Both change
 * rarely, yet reading them costs more than the rest of the request's storage work, so each
 * process keeps what it has read, and trusts it exactly as long as the database's access revision
 * stands still: triggers move that counter in the same transaction as any change to a key, an
 * account's status or a Sender ID (migration 006), whichever process makes it, the CLI included.
 *
 * Two ways to know the revision is current:
 * - `accessSnapshot` reads it (one row) before anything is taken from the cache: the requests
 *   that only read data (reports, the account, Sender ID lists) use this.
 * - `lastAccessSnapshot` reads nothing and takes the revision last seen; the sends use it, because
 *   their transaction reads the revision again as it commits (acceptance-batcher.ts) and checks
 *   every acceptance made under an older revision against the database itself. A send is then
 *   refused if its key was revoked, its account suspended or its Sender ID withdrawn at any time
 *   before its commit, which is stricter than checking when the request arrives. A refusal made
 *   from the cache is confirmed against the current revision first (`decideAccess`), so a
 *   grant made elsewhere is never refused from an old entry.
 *
 * An entry is stored in the snapshot of the revision read before its row was loaded, never a
 * later one, so a change that lands between the two reads can only make the entry look older
 * than it is.
 */
import type { AppError } from '../../errors/catalogue.ts';
import type { Store } from '../../store/connect.ts';
import { readAccessRevision } from '../../store/repositories/api-keys.repository.ts';

/**
 * Per space, the cache starts again empty past this many entries or this many bytes of keys (a
 * key is an account id and a name, or a key's digest; unknown Sender IDs are cached too, so the
 * keys are partly the caller's choice). The schemas cap `from` at 16 characters, so the byte bound
 * is a second line, for a caller that reaches here some other way.
 */
const MAX_ENTRIES = 10_000;
const MAX_KEY_BYTES = 4 * 1024 * 1024;
/** What an entry costs besides its key: the Map slot and a small object. */
const ENTRY_OVERHEAD_BYTES = 200;

class Space {
  readonly entries = new Map<string, unknown>();
  bytes = 0;
}

export class AccessSnapshot {
  readonly #spaces = new Map<string, Space>();
  /**
   * @param revision the access revision this snapshot's entries are at least as new as.
   * @param checked whether the revision was read for this request (not taken from memory).
   */
  constructor(
    readonly revision: number,
    readonly checked: boolean,
    spaces?: Map<string, Space>,
  ) {
    if (spaces) this.#spaces = spaces;
  }

  /** The same entries, marked as checked against the database for this request. */
  asChecked(): AccessSnapshot {
    return this.checked ? this : new AccessSnapshot(this.revision, true, this.#spaces);
  }

  /** The cached value for `key` in `space`, if there is one: `get` without its promise, for a path that counts them. */
  peek<V>(space: string, key: string): V | undefined {
    return this.#spaces.get(space)?.entries.get(key) as V | undefined;
  }

  /** The cached value for `key` in `space`, or `load()`'s result, remembered unless undefined. */
  async get<V>(space: string, key: string, load: () => Promise<V>): Promise<V> {
    let cache = this.#spaces.get(space);
    if (!cache) {
      cache = new Space();
      this.#spaces.set(space, cache);
    }
    if (cache.entries.has(key)) return cache.entries.get(key) as V;
    const value = await load();
    if (value === undefined) return value;
    const bytes = 2 * key.length + ENTRY_OVERHEAD_BYTES;
    if (cache.entries.size >= MAX_ENTRIES || cache.bytes + bytes > MAX_KEY_BYTES) {
      cache.entries.clear();
      cache.bytes = 0;
    }
    if (!cache.entries.has(key)) cache.bytes += bytes;
    cache.entries.set(key, value);
    return value;
  }
}

const snapshots = new WeakMap<Store, AccessSnapshot>();

/** Records a revision read from the database; returns the snapshot to use for it. */
export function observeAccessRevision(store: Store, revision: number): AccessSnapshot {
  const current = snapshots.get(store);
  // Revisions only grow: an older read (PostgreSQL answers in any order) keeps the newer snapshot.
  if (current && current.revision >= revision) return current;
  const snapshot = new AccessSnapshot(revision, false);
  snapshots.set(store, snapshot);
  return snapshot;
}

/** The cache for the store's current access revision (read now), emptied if it moved. */
export async function accessSnapshot(store: Store): Promise<AccessSnapshot> {
  return observeAccessRevision(store, await readAccessRevision(store)).asChecked();
}

/** The cache as of the last revision seen, without reading it: only for writes that check it as they commit. */
export async function lastAccessSnapshot(store: Store): Promise<AccessSnapshot> {
  return snapshots.get(store) ?? accessSnapshot(store);
}

/**
 * Decides access from `snapshot` with `decide` (a value, or the refusal). A refusal made from a
 * snapshot not read for this request is not trusted at once: if the revision has moved since,
 * the decision is made again on the current snapshot, so a grant made elsewhere is never refused
 * from an old entry. Returns the value and the snapshot it was decided on; throws the refusal.
 */
export async function decideAccess<V>(
  store: Store,
  snapshot: AccessSnapshot,
  decide: (snapshot: AccessSnapshot) => Promise<{ value: V } | { refusal: AppError }>,
): Promise<{ value: V; snapshot: AccessSnapshot }> {
  let decision = await decide(snapshot);
  if ('refusal' in decision && !snapshot.checked) {
    const current = await accessSnapshot(store);
    if (current.revision !== snapshot.revision) {
      snapshot = current;
      decision = await decide(snapshot);
    }
  }
  if ('refusal' in decision) throw decision.refusal;
  return { value: decision.value, snapshot };
}
