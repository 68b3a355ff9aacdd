import type { Context } from '../services/context.ts';
import type { Output } from './output.ts';

export interface ParsedArgs {
  positionals: string[];
  values: Record<string, string | boolean | undefined>;
}

/** One `pigeon` command: its usage line, its flags, and what it does. */
export interface Command {
  usage: string;
  options?: Record<string, 'string' | 'boolean'>;
  /** Commands that run the service open the context themselves. */
  standalone?: boolean;
  run(ctx: Context, args: ParsedArgs, out: Output): Promise<void>;
}

/** A mistake in how the command was called: printed with the usage line, exit code 2. */
export class UsageError extends Error {}

export function required(value: unknown, flag: string): string {
  if (typeof value !== 'string' || value === '') throw new UsageError(`${flag} is required.`);
  return value;
}

export function arg(positionals: string[], index: number, name: string): string {
  const value = positionals[index];
  if (value === undefined) throw new UsageError(`${name} is required.`);
  return value;
}
