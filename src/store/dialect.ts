/**
 * Which SQL dialect a Kysely instance (or a transaction on it) speaks, recorded once by
 * `openStore` and looked up through the instance's adapter, which its transactions share. Where
 * the SQL differs between SQLite and PostgreSQL, the repository asks here.
 */
import type { Kysely } from 'kysely';
import type { Database } from './database.ts';

export type DialectName = 'sqlite' | 'postgres';

type AnyExecutor = Pick<Kysely<Database>, 'getExecutor'>;

const byAdapter = new WeakMap<object, DialectName>();

export function registerDialect(db: AnyExecutor, dialect: DialectName): void {
  byAdapter.set(db.getExecutor().adapter, dialect);
}

export function dialectOf(db: AnyExecutor): DialectName {
  const dialect = byAdapter.get(db.getExecutor().adapter);
  if (!dialect) throw new Error('a database not opened by openStore');
  return dialect;
}

/** A unique or primary-key constraint refused the write (PostgreSQL 23505, or SQLite's codes). */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
