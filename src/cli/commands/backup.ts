import { BackupError, backupDatabase, restoreDatabase } from '../../services/backups/backups.ts';
import { arg, CommandFailure, type Command } from '../command.ts';
import { configOrFail } from '../startup.ts';

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** The service's refusals as the command line's: the wrong database is a usage mistake (exit 2). */
async function refusals<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof BackupError) throw new CommandFailure(err.code === 'postgres' ? 'use_pg_tools' : err.code, err.message, err.code === 'postgres' || err.code === 'memory' ? 2 : 1);
    throw err;
  }
}

// Both open the database file themselves rather than through the context every other command
// opens: backup reads a file a server is writing, and restore may create the one DATABASE_URL names.
export const backupCommands: Record<string, Command> = {
  backup: {
    usage: 'backup FILE [--replace]',
    description:
      'Copy the SQLite database to FILE while Pigeon runs.\n\n' +
      'The copy is consistent (the database as of one commit) and is written beside FILE, then renamed, so FILE is never half-written. ' +
      'Sends go on meanwhile. With PostgreSQL use pg_dump instead (the command says how).',
    options: { replace: 'boolean' },
    optionHelp: { replace: 'overwrite FILE if it exists' },
    standalone: true,
    async run(_ctx, { positionals, values }, out) {
      const file = arg(positionals, 0, 'FILE');
      const config = configOrFail();
      const taken = await refusals(() => backupDatabase(config, file, { replace: values.replace === true }));
      out.print(
        { file: taken.file, bytes: taken.bytes, migration: taken.migration, copied_ms: taken.copiedMs },
        `Backed up to ${taken.file} (${mib(taken.bytes)}, copied in ${taken.copiedMs} ms). Restore it with \`pigeon restore ${taken.file}\`.`,
      );
    },
  },
  restore: {
    usage: 'restore FILE',
    description:
      'Replace the SQLite database with the backup FILE. Stop every pigeon serve and pigeon worker first.\n\n' +
      'FILE is checked (a Pigeon database, SQLite integrity_check) and migrated to this version; the database it replaces is kept beside it as ' +
      '<file>.before-restore-<time>. Refused while another process has the database open. With PostgreSQL use pg_restore instead (the command says how).',
    standalone: true,
    async run(_ctx, { positionals }, out) {
      const file = arg(positionals, 0, 'FILE');
      const config = configOrFail();
      const restored = await refusals(() => restoreDatabase(config, file, Date.now()));
      const applied = restored.applied.length ? ` Applied ${restored.applied.join(', ')}.` : '';
      const previous = restored.previous ? ` The database it replaced is kept as ${restored.previous}.` : '';
      out.print(
        { file: restored.file, bytes: restored.bytes, applied: restored.applied, previous: restored.previous },
        `Restored ${file} to ${restored.file} (${mib(restored.bytes)}).${applied}${previous} Start Pigeon again.`,
      );
    },
  },
};
