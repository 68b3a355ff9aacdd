import { isDeliveryChild, start } from '../../runtime.ts';
import { migrateDatabase } from '../../services/database.ts';
import { UsageError, type Command } from '../command.ts';
import { configOrFail, whileStarting } from '../startup.ts';

async function runService(opts: { api: boolean; workers: boolean | 'process' }): Promise<void> {
  const config = configOrFail();
  const deliveryChild = !opts.api && isDeliveryChild();
  const running = await whileStarting(config, () => start({ ...opts, config, deliveryChild }));
  let stopping = false;
  const shutdown = (signal: string) => {
    // A repeated signal must not kill the process before it has unbound from the SMSC.
    if (stopping) return running.ctx.log.warn({ signal }, 'already shutting down');
    stopping = true;
    running.ctx.log.info({ signal }, 'shutting down');
    // A stuck shutdown must not hang the supervisor: exit anyway after a bound.
    setTimeout(() => process.exit(1), 15_000).unref();
    running.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  if (!deliveryChild) process.on('SIGINT', () => shutdown('SIGINT'));
  // Ctrl-C reaches the whole process group: the delivery process waits for its parent's SIGTERM,
  // which comes once the API has stopped taking requests.
  else process.on('SIGINT', () => {});
}

export const serviceCommands: Record<string, Command> = {
  serve: {
    usage: 'serve [--no-workers] [--one-process]',
    description:
      'Run the API and the dashboard, and the workers in a delivery process of their own that serve starts and restarts.\n\n' +
      'Creates the SQLite database named by DATABASE_URL if there is none. Stops cleanly on SIGTERM or Ctrl-C.',
    options: { 'no-workers': 'boolean', 'one-process': 'boolean' },
    optionHelp: {
      'no-workers': 'API and dashboard only; run `pigeon worker` processes beside it',
      'one-process': 'the workers in this process, on its event loop (a machine with one core)',
    },
    standalone: true,
    createsDatabase: true,
    async run(_ctx, { values }) {
      if (values['no-workers'] && values['one-process']) throw new UsageError('Give --no-workers or --one-process, not both.');
      await runService({ api: true, workers: values['no-workers'] ? false : values['one-process'] ? true : 'process' });
    },
  },
  worker: {
    usage: 'worker',
    description:
      'Run the dispatch, receipt and webhook workers only (scale-out beside `pigeon serve --no-workers`).\n\n' +
      'A worker never creates the database: it must find the one the server uses.',
    standalone: true,
    async run() {
      await runService({ api: false, workers: true });
    },
  },
  migrate: {
    usage: 'migrate',
    description: 'Create the database if there is none and apply the migrations it lacks.',
    createsDatabase: true,
    migrates: true,
    async run(ctx, _args, out) {
      const applied = await migrateDatabase(ctx);
      out.print({ applied }, applied.length ? `Applied ${applied.join(', ')}.` : 'Nothing to apply: the database is up to date.');
    },
  },
};
