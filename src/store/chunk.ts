/**
 * Splits rows for multi-row statements so that no statement binds more parameters than the
 * databases allow (SQLite 32,766; PostgreSQL 65,535).
 */
export function chunked<T>(rows: readonly T[], parametersPerRow: number): T[][] {
  const size = Math.max(1, Math.floor(30_000 / parametersPerRow));
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
  return out;
}
