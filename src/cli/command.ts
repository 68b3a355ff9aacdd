import type { Context } from '../services/context.ts';
import type { Output } from './output.ts';

export interface ParsedArgs {
  positionals: string[];
  values: Record<string, string | boolean | undefined>;
}

/**
 * One `pigeon` command: its usage line, its flags, and what it does. The command line's parser and
 * help (src/cli/main.ts) are built from these records: the words of the record's key are the
 * command (`'account create'`), the usage line names its arguments (`ID`, `[NAME]`) and the value
 * of each flag (`--label L`).
 */
export interface Command {
  usage: string;
  /** What the command does: the first line is its summary in `pigeon --help`, all of it in `pigeon <command> --help`. */
  description?: string;
  options?: Record<string, 'string' | 'boolean'>;
  /** One line of help per flag, by the flag's name. */
  optionHelp?: Record<string, string>;
  /** Commands that run the service open the context themselves. */
  standalone?: boolean;
  /** Whether the command may create the database when DATABASE_URL names a file that does not exist. */
  createsDatabase?: boolean;
  /**
   * The command applies the migrations itself (`pigeon migrate`). Every other command that opens
   * the context needs a database with every migration applied, and refuses one that lacks some.
   */
  migrates?: boolean;
  run(ctx: Context, args: ParsedArgs, out: Output): Promise<void>;
}

/** A mistake in how the command was called: printed with the usage line, exit code 2. */
export class UsageError extends Error {}

/**
 * A command that cannot do what was asked, said in one message under its own code: exit 1 for a
 * refusal, 2 for a command that does not apply to this configuration (no usage line: the call
 * itself was right).
 */
export class CommandFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly exitCode: 1 | 2,
  ) {
    super(message);
  }
}

export function required(value: unknown, flag: string): string {
  if (typeof value !== 'string' || value === '') throw new UsageError(`${flag} is required.`);
  return value;
}

export function arg(positionals: string[], index: number, name: string): string {
  const value = positionals[index];
  if (value === undefined) throw new UsageError(`${name} is required.`);
  return value;
}
