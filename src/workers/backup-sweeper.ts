/**
 * Scheduled backups of a SQLite store (src/services/backups/backups.ts): looks once a minute
 * whether one is due (and once at start), so a backup starts at most a minute late; the copy itself
 * runs on a thread.
 */
import { runScheduledBackup } from '../services/backups/backups.ts';
import type { Context } from '../services/context.ts';
import { IntervalSweeper } from './interval-sweeper.ts';

export class BackupSweeper extends IntervalSweeper {
  constructor(ctx: Context) {
    super(ctx, {
      name: 'backup',
      intervalMs: 60_000,
      // A backup due while no process ran (or never taken yet) is taken as the process starts.
      atStart: true,
      failureMessage: 'scheduled backup failed',
      sweep: async () => ((await runScheduledBackup(ctx)).taken ? 1 : 0),
    });
  }
}
