/**
 * A configuration problem and the error that carries it: apart from config.ts so that the parts of
 * the configuration loaded in modules of their own (smpp-config.ts) throw it without importing the
 * loader that imports them.
 */
/** One thing wrong with the environment, as the start-up report prints it. */
export interface ConfigProblem {
  /** The variable at fault, e.g. `PORT`. */
  variable: string;
  /** Its value as given, secrets masked; null when the variable is missing. */
  value: string | null;
  /** What is wrong with it. */
  message: string;
  /** What to do about it. */
  hint: string;
}

/**
 * A configuration that cannot be used. `loadConfig` collects every problem before throwing, so
 * that one start reports them all instead of one per attempt.
 */
export class ConfigError extends Error {
  readonly problems: ConfigProblem[];
  constructor(message: string, problems?: ConfigProblem[]) {
    super(message);
    this.name = 'ConfigError';
    this.problems = problems ?? [{ variable: /^[A-Z][A-Z0-9_]+/.exec(message)?.[0] ?? 'configuration', value: null, message, hint: '' }];
  }
}
