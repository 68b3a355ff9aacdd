/**
 * What a driver that wraps another's connections (condition.ts, pipelined-postgres.ts) passes
 * through unchanged: the inner driver's savepoints, each on the connection it wraps.
 */
import type { DatabaseConnection, Driver } from 'kysely';

export function savepointsOf(inner: Driver, innerOf: (c: DatabaseConnection) => DatabaseConnection): Pick<Driver, 'savepoint' | 'rollbackToSavepoint' | 'releaseSavepoint'> {
  const out: Pick<Driver, 'savepoint' | 'rollbackToSavepoint' | 'releaseSavepoint'> = {};
  if (inner.savepoint) out.savepoint = (c, name, compile) => inner.savepoint!(innerOf(c), name, compile);
  if (inner.rollbackToSavepoint) out.rollbackToSavepoint = (c, name, compile) => inner.rollbackToSavepoint!(innerOf(c), name, compile);
  if (inner.releaseSavepoint) out.releaseSavepoint = (c, name, compile) => inner.releaseSavepoint!(innerOf(c), name, compile);
  return out;
}
