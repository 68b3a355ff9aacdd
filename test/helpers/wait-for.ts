/**
 * Waiting in tests: poll a condition until it holds or a deadline passes, instead of sleeping a
 * fixed time. The value the condition returns (anything but undefined, null or false) is handed back.
 */
export interface WaitOptions {
  /**
   * How long to wait at most, in milliseconds (default 30 s): a deadline for a stuck test, not a
   * measure of speed. A condition that holds ends the wait at once, so a generous deadline costs
   * a passing test nothing, and a loaded CI machine may take seconds for what takes milliseconds here.
   */
  timeout?: number;
  /** The pause between two checks, in milliseconds (default 10). */
  interval?: number;
  /** What was awaited, for the error at the deadline (a function to describe the state then). */
  message?: string | (() => string);
}

export async function waitFor<T>(check: () => T | Promise<T>, opts: WaitOptions = {}): Promise<Exclude<T, undefined | null | false>> {
  const { timeout = 30_000, interval = 10 } = opts;
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== null && value !== false) return value as Exclude<T, undefined | null | false>;
    if (Date.now() >= deadline) {
      const what = typeof opts.message === 'function' ? opts.message() : (opts.message ?? 'the condition');
      throw new Error(`waited ${timeout} ms for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}
