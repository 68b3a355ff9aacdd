/**
 * `pigeon`: the operator's command line (DECISIONS.md §7). Every command accepts `--json` and then
 * prints exactly one JSON object on stdout; errors go to stderr (as JSON with --json) with a
 * non-zero exit code: 1 for a refused operation, 2 for a usage mistake.
 */
import { parseArgs } from 'node:util';
import { AppError } from '../errors/catalogue.ts';
import { ConfigError, loadConfig } from '../config/config.ts';
import { createLogger, openContext, start } from '../runtime.ts';
import { migrateToLatest } from '../store/migrate.ts';
import { UsageError, type Command } from './command.ts';
import { accountCommands } from './commands/account.ts';
import { keyCommands } from './commands/key.ts';
import { operatorCommands } from './commands/operator.ts';
import { senderIdCommands } from './commands/sender-id.ts';
import { output } from './output.ts';

const commands: Record<string, Command> = {
  serve: {
    usage: 'serve [--no-workers]',
    options: { 'no-workers': 'boolean' },
    standalone: true,
    async run(_ctx, { values }) {
      await runService({ api: true, workers: !values['no-workers'] });
    },
  },
  worker: {
    usage: 'worker',
    standalone: true,
    async run() {
      await runService({ api: false, workers: true });
    },
  },
  migrate: {
    usage: 'migrate',
    async run(ctx, _args, out) {
      const applied = await migrateToLatest(ctx.store.db);
      out.print({ applied }, applied.length ? `Applied ${applied.join(', ')}.` : 'The database is up to date.');
    },
  },
  ...accountCommands,
  ...keyCommands,
  ...senderIdCommands,
  ...operatorCommands,
};

async function runService(opts: { api: boolean; workers: boolean }): Promise<void> {
  const running = await start(opts);
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
  process.on('SIGINT', () => shutdown('SIGINT'));
}

function usage(): string {
  return ['Usage: pigeon <command> [--json]', '', ...Object.values(commands).map((c) => `  pigeon ${c.usage}`)].join('\n');
}

function findCommand(argv: string[]): { name: string; rest: string[] } | null {
  const words = argv.filter((a) => !a.startsWith('-'));
  const two = words.slice(0, 2).join(' ');
  if (commands[two]) return { name: two, rest: removeWords(argv, 2) };
  if (words[0] && commands[words[0]]) return { name: words[0], rest: removeWords(argv, 1) };
  return null;
}

function removeWords(argv: string[], n: number): string[] {
  const out = [...argv];
  for (let removed = 0, i = 0; removed < n && i < out.length; ) {
    if (out[i]!.startsWith('-')) i++;
    else {
      out.splice(i, 1);
      removed++;
    }
  }
  return out;
}

async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  const out = output(json);
  const fail = (code: string, message: string, exit: number) => {
    process.stderr.write(json ? `${JSON.stringify({ status: 'error', code, message })}\n` : `pigeon: ${message}\n`);
    return exit;
  };
  if (argv.length === 0 || argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${usage()}\n`);
    return argv.length === 0 ? 2 : 0;
  }
  const found = findCommand(argv);
  if (!found) return fail('usage', `unknown command.\n${usage()}`, 2);
  const command = commands[found.name]!;
  let parsed;
  try {
    parsed = parseArgs({
      args: found.rest.filter((a) => a !== '--json'),
      options: Object.fromEntries(Object.entries(command.options ?? {}).map(([k, type]) => [k, { type }])),
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    return fail('usage', `${(err as Error).message}\nUsage: pigeon ${command.usage}`, 2);
  }
  try {
    if (command.standalone) {
      await command.run(undefined as never, parsed, out);
      return -1; // keeps running
    }
    const config = loadConfig();
    const log = createLogger({ ...config, logLevel: process.env.LOG_LEVEL ?? 'warn' }, 2);
    const ctx = await openContext(config, log);
    try {
      await command.run(ctx, parsed, out);
    } finally {
      await ctx.store.close();
    }
    return 0;
  } catch (err) {
    if (err instanceof UsageError) return fail('usage', `${err.message}\nUsage: pigeon ${command.usage}`, 2);
    if (err instanceof AppError) return fail(err.code, err.message, 1);
    if (err instanceof ConfigError) return fail('config', err.message, 2);
    return fail('internal_error', (err as Error).stack ?? String(err), 1);
  }
}

const code = await main(process.argv.slice(2));
if (code >= 0) process.exitCode = code;
