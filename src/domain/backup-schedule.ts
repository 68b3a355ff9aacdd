/**
 * Scheduled backups of a SQLite store (DECISIONS.md §13): what the files in BACKUP_DIR are named,
 * when the next one is due and which old ones go. The name carries the time the backup was taken,
 * so the folder itself is the schedule's record: nothing in the database has to be written (a row
 * written there would end up inside the next backup), and a restart does not take an extra one.
 */

const NAME = /^pigeon-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z\.db$/;

/** `pigeon-20261126T153000Z.db`: the UTC second the backup was started. */
export function backupFileName(at: number): string {
  const iso = new Date(Math.floor(at / 1000) * 1000).toISOString();
  return `pigeon-${iso.slice(0, 19).replace(/[-:]/g, '')}Z.db`;
}

/** When the backup named `name` was taken, or null for any other file (which is never touched). */
export function backupTakenAt(name: string): number | null {
  const m = NAME.exec(name);
  if (!m) return null;
  const at = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  return backupFileName(at) === name ? at : null;
}

/** The scheduled backups among `names`, newest first. */
export function scheduledBackups(names: readonly string[]): { name: string; at: number }[] {
  return names
    .map((name) => ({ name, at: backupTakenAt(name) }))
    .filter((b): b is { name: string; at: number } => b.at !== null)
    .sort((a, b) => b.at - a.at);
}

/**
 * Whether a backup is due at `now`: no backup was taken within the last `intervalMs`. One dated
 * more than an interval ahead (the clock was set back since) does not count, so it cannot hold
 * the schedule up until the clock catches up with it.
 */
export function backupDue(names: readonly string[], now: number, intervalMs: number): boolean {
  return !scheduledBackups(names).some((b) => now - b.at < intervalMs && b.at - now < intervalMs);
}

/** The scheduled backups beyond the newest `keep`, to remove. Files of any other name are kept. */
export function backupsToRemove(names: readonly string[], keep: number): string[] {
  return scheduledBackups(names)
    .slice(Math.max(keep, 1))
    .map((b) => b.name);
}
