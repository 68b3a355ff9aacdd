/**
 * Group commit for Verify's checks on SQLite, as acceptance-batcher.ts does for sends: the checks
 * whose requests arrived in one turn of the event loop take their check (one conditional UPDATE
 * each, `takeCheckIn`) in one transaction, so a flood of checks pays for one commit per group
 * instead of one per check; with no load a check still commits on its own, at once. The UPDATEs
 * run one after the other in the transaction, each seeing those before it, so no more checks are
 * taken from a verification than it has left, whatever the group holds.
 *
 * PostgreSQL takes each check on its own: there a transaction would add round trips rather than
 * save a commit, and two groups locking the same rows in different orders could deadlock.
 *
 * If a group's transaction fails, each of its checks is taken again alone, so one failure can
 * never fail its neighbours.
 */
import type { Store } from '../../store/connect.ts';
import type { VerificationsTable } from '../../store/database.ts';
import { takeCheckIn } from '../../store/repositories/verify.repository.ts';

export interface CheckToTake {
  accountId: string;
  serviceId: string;
  target: { id: string } | { recipient: string };
  now: number;
}

interface Waiting {
  check: CheckToTake;
  resolve: (row: VerificationsTable | undefined) => void;
  reject: (error: unknown) => void;
}

class CheckTaker {
  #queue: Waiting[] = [];
  #running = false;
  #scheduled = false;

  constructor(private readonly store: Store) {}

  take(check: CheckToTake): Promise<VerificationsTable | undefined> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ check, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => {
          this.#scheduled = false;
          this.#pump();
        });
      }
    });
  }

  #pump(): void {
    if (this.#running || this.#queue.length === 0) return;
    const items = this.#queue.splice(0);
    this.#running = true;
    void this.#flush(items).finally(() => {
      this.#running = false;
      this.#pump();
    });
  }

  async #flush(items: Waiting[]): Promise<void> {
    const one = (db: Parameters<typeof takeCheckIn>[0], c: CheckToTake) => takeCheckIn(db, c.accountId, c.serviceId, c.target, c.now);
    let rows: (VerificationsTable | undefined)[];
    try {
      rows = items.length === 1 ? [await one(this.store.db, items[0]!.check)] : await this.store.db.transaction().execute(async (trx) => {
        const taken: (VerificationsTable | undefined)[] = [];
        for (const item of items) taken.push(await one(trx, item.check));
        return taken;
      });
    } catch (error) {
      if (items.length === 1) {
        items[0]!.reject(error);
        return;
      }
      for (const item of items) {
        try {
          item.resolve(await one(this.store.db, item.check));
        } catch (err) {
          item.reject(err);
        }
      }
      return;
    }
    items.forEach((item, i) => item.resolve(rows[i]));
  }
}

const takers = new WeakMap<Store, CheckTaker>();

/** Takes one check from the verification (`takeCheckIn`), in a group commit on SQLite. */
export function takeCheck(store: Store, check: CheckToTake): Promise<VerificationsTable | undefined> {
  if (store.dialect !== 'sqlite') return takeCheckIn(store.db, check.accountId, check.serviceId, check.target, check.now);
  let taker = takers.get(store);
  if (!taker) {
    taker = new CheckTaker(store);
    takers.set(store, taker);
  }
  return taker.take(check);
}
