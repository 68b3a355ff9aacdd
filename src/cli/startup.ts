/**
 * How the command line reports a start that cannot succeed: each problem with its variable, the
 * value (secrets masked) and what to do, on stderr, without a stack trace (DECISIONS.md §7).
 */
import { ConfigError, loadConfig, maskUrlPassword, type Config, type ConfigProblem } from '../config/config.ts';
import { startupProblems } from '../config/startup-checks.ts';

/** A start that failed for a reason a setting explains. Exit code 2 for configuration, 1 otherwise. */
export class StartupFailure extends Error {
  readonly problems: ConfigProblem[];
  readonly exitCode: number;
  constructor(problems: ConfigProblem[], exitCode: number) {
    super(problems.map((p) => `${p.variable}: ${p.message}`).join('; '));
    this.problems = problems;
    this.exitCode = exitCode;
  }
}

/** Reads the configuration, turning its problems into a StartupFailure. */
export function configOrFail(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) throw new StartupFailure(err.problems, 2);
    throw err;
  }
}

/** Runs a step of the start, translating the failures that a setting explains. */
export async function whileStarting<T>(config: Config, step: () => Promise<T> | T): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (err instanceof StartupFailure) throw err;
    const problems = startupProblems(err, config);
    if (problems) throw new StartupFailure(problems, err instanceof ConfigError ? 2 : 1);
    throw err;
  }
}

export function formatProblems(problems: ConfigProblem[]): string {
  const heading = problems.length === 1 ? 'pigeon: cannot start:' : `pigeon: cannot start, ${problems.length} problems:`;
  const lines = problems.map((p) => {
    const where = p.value === null ? p.variable : `${p.variable}=${JSON.stringify(p.value)}`;
    return `  ${where}\n    ${p.message}.${p.hint ? `\n    ${p.hint}.` : ''}`;
  });
  return `${heading}\n${lines.join('\n')}\n`;
}

/** Writes the failure to stderr: text, or with --json one JSON object. */
export function reportFailure(failure: StartupFailure, json: boolean): void {
  const message = failure.problems.map((p) => `${p.variable}: ${p.message}`).join('; ');
  process.stderr.write(
    json ? `${JSON.stringify({ status: 'error', code: 'config', message, problems: failure.problems })}\n` : formatProblems(failure.problems),
  );
}

/** The message of an unexpected error, secrets in URLs masked; its stack only at LOG_LEVEL=debug or trace. */
export function describeUnexpected(err: unknown): string {
  const e = err as Error;
  const level = process.env.LOG_LEVEL?.trim();
  const text = level === 'debug' || level === 'trace' ? (e?.stack ?? String(err)) : `${e?.message ?? String(err)} (LOG_LEVEL=debug shows where)`;
  return maskUrlPassword(text);
}
