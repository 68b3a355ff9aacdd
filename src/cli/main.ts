/**
 * `pigeon`: the operator's command line (DECISIONS.md §7). Every command accepts `--json` and then
 * prints exactly one JSON object on stdout; errors go to stderr (as JSON with --json) with a
 * non-zero exit code: 1 for a refused operation, 2 for a usage mistake or a configuration problem.
 *
 * The commands are declared as `Command` records (src/cli/commands/*.ts); the parser and the help
 * are built from them with commander.
 */
import { readFileSync } from 'node:fs';
import { Command as Program, CommanderError, Option } from 'commander';
import { AppError } from '../errors/catalogue.ts';
import { maskUrlPassword } from '../config/config.ts';
import { checkDatabaseLocation } from '../config/startup-checks.ts';
import { databaseIsCurrent } from '../services/database.ts';
import { actingAs, cliActor } from '../services/audit/audit.ts';
import { createLogger, openContext } from '../runtime.ts';
import { CommandFailure, UsageError, type Command, type ParsedArgs } from './command.ts';
import { backupCommands } from './commands/backup.ts';
import { accountCommands } from './commands/account.ts';
import { devWebhookCommands } from './commands/dev-webhook.ts';
import { doctorCommands } from './commands/doctor.ts';
import { keyCommands } from './commands/key.ts';
import { inboundCommands } from './commands/inbound.ts';
import { numberCommands } from './commands/number.ts';
import { optOutCommands } from './commands/opt-out.ts';
import { privacyCommands } from './commands/privacy.ts';
import { operatorCommands } from './commands/operator.ts';
import { memberCommands } from './commands/member.ts';
import { senderIdCommands } from './commands/sender-id.ts';
import { serviceCommands } from './commands/service.ts';
import { smppUserCommands } from './commands/smpp-user.ts';
import { routeCommands } from './commands/route.ts';
import { reportCommands } from './commands/report.ts';
import { rateCardCommands } from './commands/rate-card.ts';
import { auditCommands } from './commands/audit.ts';
import { verifyCommands } from './commands/verify.ts';
import { output } from './output.ts';
import { configOrFail, describeUnexpected, reportFailure, StartupFailure, whileStarting } from './startup.ts';

export const commands: Record<string, Command> = {
  ...serviceCommands,
  ...accountCommands,
  ...keyCommands,
  ...senderIdCommands,
  ...numberCommands,
  ...smppUserCommands,
  ...routeCommands,
  ...reportCommands,
  ...rateCardCommands,
  ...inboundCommands,
  ...optOutCommands,
  ...privacyCommands,
  ...operatorCommands,
  ...memberCommands,
  ...doctorCommands,
  ...devWebhookCommands,
  ...backupCommands,
  ...auditCommands,
  ...verifyCommands,
};

const GROUPS: Record<string, string> = {
  account: 'Customer accounts: create, show, list, suspend, resume, limits, retention',
  credits: 'Top up an account',
  key: 'API keys: create, list, revoke',
  'sender-id': 'Review Sender IDs: list, approve, reject, request-info',
  operator: 'Console logins for operators, with roles and two-factor: create, role, list, reset-2fa',
  member: "The people of an account's dashboard: list",
  'smpp-user': 'SMPP credentials for accounts: create, list, rotate, delete',
  route: 'SMPP routes to carriers: list, show, add, update, remove',
  message: 'One message as the operator sees it',
  report: 'Reports for the operator: margin',
  'rate-card': 'Prices per destination: list, show, import',
  retention: 'Run the retention purge now',
  privacy: 'Erase a phone number; list the erasures',
  audit: 'The audit log: who changed what',
  verify: "Verify's fraud guard: blocked number ranges, unblock",
};

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

interface UsageParts {
  /** Positional arguments in order, `optional` when bracketed. */
  args: { name: string; optional: boolean }[];
  /** The value placeholder of each string flag, e.g. `label` -> `L`. */
  placeholders: Record<string, string>;
}

/** Reads the arguments and flag placeholders out of a usage line such as `key create ACCOUNT_ID --label L [--scopes a,b]`. */
export function parseUsage(name: string, usage: string, options: Record<string, 'string' | 'boolean'>): UsageParts {
  const words = usage.trim().split(/\s+/).slice(name.split(' ').length);
  const parts: UsageParts = { args: [], placeholders: {} };
  let pendingFlag: string | null = null;
  for (const raw of words) {
    const optional = raw.startsWith('[') || raw.endsWith(']');
    const word = raw.replace(/^\[+|\]+$/g, '');
    if (word === '|' || word === '...') continue;
    if (pendingFlag) {
      parts.placeholders[pendingFlag] = word;
      pendingFlag = null;
      continue;
    }
    if (word.startsWith('--')) {
      const flag = word.slice(2).split(/[=|]/)[0]!;
      if (options[flag] === 'string') pendingFlag = flag;
      continue;
    }
    // `URL|--clear`: an argument or a flag instead of it, so the argument is optional.
    const [argName] = word.split('|');
    if (argName && /^[A-Za-z_][\w-]*$/.test(argName)) parts.args.push({ name: argName, optional: optional || word.includes('|') });
  }
  return parts;
}

interface Chosen {
  name: string;
  command: Command;
  args: ParsedArgs;
}

/** Builds the commander program from the records; the chosen command is handed to `onRun`. */
export function buildProgram(records: Record<string, Command>, onRun: (chosen: Chosen) => void, io: { out(s: string): void; err(s: string): void }): Program {
  const program = new Program('pigeon')
    .description('Pigeon, the self-hosted SMS API gateway: run the service and manage accounts, keys and Sender IDs.')
    .usage('<command> [options]')
    .version(version(), '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help (pigeon <command> --help for a command)')
    .addHelpCommand(false)
    .option('--json', 'print one JSON object (on stderr for errors)')
    .configureOutput({ writeOut: io.out, writeErr: io.err, outputError: () => {} })
    .exitOverride()
    .allowExcessArguments(false)
    .showSuggestionAfterError(true);
  program.addHelpText('after', '\nEvery command accepts --json. Exit codes: 0 done, 1 refused, 2 usage or configuration mistake.');
  const groups = new Map<string, Program>();
  for (const [name, record] of Object.entries(records)) {
    const words = name.split(' ');
    let parent = program;
    for (const word of words.slice(0, -1)) {
      let group = groups.get(word);
      if (!group) {
        group = parent.command(word).description(GROUPS[word] ?? `${word} commands`).usage('<command> [options]').addHelpCommand(false);
        groups.set(word, group);
      }
      parent = group;
    }
    const usage = parseUsage(name, record.usage, record.options ?? {});
    const leaf = parent
      .command(words.at(-1)!)
      .description(record.description ?? '')
      .usage(record.usage.trim().split(/\s+/).slice(words.length).join(' ') || '[options]')
      .allowExcessArguments(false);
    // The summary line in the list of commands; the whole text in the command's own help.
    leaf.summary((record.description ?? '').split('\n')[0]!);
    for (const arg of usage.args) leaf.argument(arg.optional ? `[${arg.name}]` : `<${arg.name}>`);
    const flags: [string, Option][] = [];
    for (const [flag, type] of Object.entries(record.options ?? {})) {
      const help = record.optionHelp?.[flag] ?? '';
      const option = type === 'string' ? new Option(`--${flag} <${usage.placeholders[flag] ?? 'VALUE'}>`, help) : new Option(`--${flag}`, help);
      leaf.addOption(option);
      flags.push([flag, option]);
    }
    leaf.option('--json', 'print one JSON object');
    leaf.action((...params: unknown[]) => {
      const cmd = params.at(-1) as Program;
      const values: ParsedArgs['values'] = {};
      for (const [flag, option] of flags) {
        const value = cmd.getOptionValue(option.attributeName()) as string | boolean | undefined;
        // commander reads `--no-workers` as `workers: false`; the record asked for `no-workers`.
        if (flag.startsWith('no-')) values[flag] = value === false ? true : undefined;
        // `--daily N` beside `--no-daily`: commander stores both under `daily`, so a negated one reads false.
        else values[flag] = value === false && (record.options ?? {})[flag] === 'string' ? undefined : value;
      }
      // Commander lets the last of `--daily N` and `--no-daily` win; the record decides whether both may be given.
      let root = cmd;
      while (root.parent) root = root.parent;
      const raw = (root as unknown as { rawArgs: string[] }).rawArgs;
      for (const [flag] of flags) {
        const base = flag.slice(3);
        if (!flag.startsWith('no-') || (record.options ?? {})[base] !== 'string' || !raw.includes(`--${flag}`)) continue;
        const at = raw.indexOf(`--${base}`);
        const inline = raw.find((a) => a.startsWith(`--${base}=`));
        if (at < 0 && !inline) continue;
        values[flag] = true;
        values[base] = at >= 0 ? raw[at + 1] : inline!.slice(base.length + 3);
      }
      // Bracketed arguments left out come back as undefined; the records expect them absent.
      const positionals = (cmd.args as (string | undefined)[]).filter((a): a is string => a !== undefined);
      onRun({ name, command: record, args: { positionals, values } });
    });
  }
  return program;
}

/** The command named by the first words of argv, for the usage line of an error. */
function findCommand(argv: string[]): string | null {
  const words = argv.filter((a) => !a.startsWith('-'));
  const two = words.slice(0, 2).join(' ');
  if (commands[two]) return two;
  if (words[0] && commands[words[0]]) return words[0];
  if (words[0] && GROUPS[words[0]]) return words[0];
  return null;
}

async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  const out = output(json);
  const fail = (code: string, message: string, exit: number) => {
    process.stderr.write(json ? `${JSON.stringify({ status: 'error', code, message })}\n` : `pigeon: ${message}\n`);
    return exit;
  };
  const usageHint = (name: string | null) => {
    const record = name ? commands[name] : undefined;
    if (record) return `\nUsage: pigeon ${record.usage}\nSee pigeon ${name} --help.`;
    return name ? `\nSee pigeon ${name} --help.` : '\nSee pigeon --help.';
  };

  let chosen: Chosen | null = null;
  let helpText = '';
  const program = buildProgram(
    commands,
    (c) => {
      chosen = c;
    },
    { out: (s) => process.stdout.write(s), err: (s) => (helpText += s) },
  );
  try {
    program.parse(argv, { from: 'user' });
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
    // A group or `pigeon` alone: the help of what was given, as a usage mistake.
    if (err.code === 'commander.help' || err.code === 'commander.executeSubCommandAsync') {
      process.stderr.write(helpText);
      return 2;
    }
    const message = err.message.replace(/^error: /, '');
    return fail('usage', `${message.charAt(0).toUpperCase()}${message.slice(1)}${usageHint(findCommand(argv))}`, 2);
  }
  const picked = chosen as Chosen | null;
  if (!picked) return fail('usage', `No command given.${usageHint(null)}`, 2);
  const { name, command, args } = picked;
  try {
    if (command.standalone) {
      await command.run(undefined as never, args, out);
      return -1; // keeps running, or ends itself
    }
    const config = configOrFail();
    await whileStarting(config, () => checkDatabaseLocation(config.databaseUrl, command.createsDatabase === true));
    const log = createLogger({ ...config, logLevel: process.env.LOG_LEVEL?.trim() || 'warn' }, 2);
    // Only `serve` (and `worker`, on start) and `migrate` apply migrations; other commands need them applied.
    const ctx = await whileStarting(config, () => openContext(config, log, { migrate: false }));
    try {
      // The first query is where an unreachable PostgreSQL shows (its pool connects lazily): answer it
      // like a failed start, naming DATABASE_URL, for every command.
      const current = await whileStarting(config, () => databaseIsCurrent(ctx));
      if (!command.migrates && !current) {
        throw new StartupFailure(
          [
            {
              variable: 'DATABASE_URL',
              value: maskUrlPassword(config.databaseUrl),
              message: 'the database lacks migrations this version of Pigeon needs',
              hint: 'Run `pigeon migrate` (or start `pigeon serve`, which applies them), then this command again',
            },
          ],
          1,
        );
      }
      // Every change a command makes is recorded as the command line's, under the machine's user.
      await command.run(actingAs(ctx, cliActor()), args, out);
    } finally {
      await ctx.store.close();
    }
    return 0;
  } catch (err) {
    if (err instanceof UsageError) return fail('usage', `${err.message}${usageHint(name)}`, 2);
    if (err instanceof CommandFailure) return fail(err.code, err.message, err.exitCode);
    if (err instanceof AppError) return fail(err.code, err.message, 1);
    if (err instanceof StartupFailure) {
      reportFailure(err, json);
      return err.exitCode;
    }
    return fail('internal_error', describeUnexpected(err), 1);
  }
}

const code = await main(process.argv.slice(2));
// A failed start may leave threads and sockets open: end the process rather than hang.
if (code > 0) process.exit(code);
if (code === 0) process.exitCode = 0;
