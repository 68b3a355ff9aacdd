/**
 * Runs a store suite once per dialect available (`availableDialects`). `open()` gives a fresh,
 * migrated store built as production builds it; stores a test leaves open are closed after it.
 */
import { afterEach, describe } from 'node:test';
import type { Store } from '../../src/store/connect.ts';
import { TEST_DATABASE_URL, openTestStore, type TestDialect } from './test-store.ts';

/**
 * SQLite always, PostgreSQL when TEST_DATABASE_URL names one; TEST_DIALECTS (a comma-separated
 * list) narrows that: `npm run test:pg` sets it to `postgres`, since the plain run covers SQLite.
 */
export const availableDialects: readonly TestDialect[] = (() => {
  const available: TestDialect[] = TEST_DATABASE_URL.startsWith('postgres') ? ['sqlite', 'postgres'] : ['sqlite'];
  const wanted = process.env.TEST_DIALECTS?.split(',').map((d) => d.trim()).filter(Boolean);
  return wanted?.length ? available.filter((d) => wanted.includes(d)) : available;
})();

export function forEachDialect(suite: (dialect: TestDialect, open: () => Promise<Store>) => void): void {
  for (const dialect of availableDialects) {
    describe(dialect, () => {
      const open = new Set<Store>();
      afterEach(async () => {
        const stores = [...open];
        open.clear();
        await Promise.all(stores.map((store) => store.close()));
      });
      suite(dialect, async () => {
        const store = await openTestStore(dialect);
        let closed: Promise<void> | null = null;
        const tracked: Store = {
          ...store,
          close() {
            open.delete(tracked);
            closed ??= store.close();
            return closed;
          },
        };
        open.add(tracked);
        return tracked;
      });
    });
  }
}
