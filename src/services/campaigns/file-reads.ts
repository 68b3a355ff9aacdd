/**
 * How many campaign files a process reads at once. The composer posts its whole form, file
 * included, for every preview (each change of the form) and again to send; each read streams up
 * to 100,000 rows through the checks, a send keeps its valid rows in memory, and an XLSX file is
 * held whole and parsed on a worker thread. Without bounds, an owner typing a template, or a script
 * posting previews in a loop, could keep the process reading files for nobody.
 *
 * - Per account, one file read at a time (`accountFileReads`). A new preview replaces the
 *   account's preview in progress or waiting (it stops at its next chunk, and answers
 *   `campaign_file_busy`): only the latest form matters. A send also replaces a preview, and waits
 *   for a send in progress (a double click posts the same form twice; the second then finds the
 *   campaign the first made); more than `maxWaitingSends` sends waiting are refused.
 * - Per process, `fileReads`: at most 4 files read at once, 8 more waiting (their uploads unread,
 *   so TCP slows their senders), then `503 service_unavailable` with Retry-After.
 * - Per process, `xlsxReads`: one XLSX workbook parsed at a time on its worker thread (about a
 *   second of one core and up to a few hundred MiB for a 100,000-row sheet), 4 more waiting
 *   (their uploads gathered), then `503 service_unavailable`.
 */
import { AppError } from '../../errors/catalogue.ts';
import { Slots } from '../../util/slots.ts';

/** Seconds a refused read is told to wait: the reads ahead of it take seconds each. */
const RETRY_AFTER_SECONDS = 30;

export const fileReads = new Slots(
  4,
  8,
  () =>
    new AppError('service_unavailable', 'The server is checking too many campaign files at the moment; try again in a minute.', {
      headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
    }),
);

export const xlsxReads = new Slots(
  1,
  4,
  () =>
    new AppError('service_unavailable', 'The server is reading too many spreadsheets at the moment; try again in a minute, or save the sheet as “CSV UTF-8” and upload that.', {
      headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
    }),
);

export type FileReadPurpose = 'preview' | 'send';

interface Turn {
  purpose: FileReadPurpose;
  controller: AbortController;
  grant: () => void;
}

interface Lane {
  running: Turn | null;
  waiting: Turn[];
}

/** One campaign file read at a time per account; see the module's comment for who waits and who is replaced. */
export class AccountFileReads {
  readonly #lanes = new Map<string, Lane>();
  /** Sends of one account that may wait behind the one being read. */
  maxWaitingSends = 2;

  /** Accounts with a read in progress or waiting (for tests). */
  get size(): number {
    return this.#lanes.size;
  }

  /**
   * Waits for the account's turn. Resolves with a signal, aborted (with a `campaign_file_busy`
   * reason) if a newer read replaces this one, and the function that ends the turn.
   */
  async enter(accountId: string, purpose: FileReadPurpose): Promise<{ signal: AbortSignal; leave: () => void }> {
    let lane = this.#lanes.get(accountId);
    if (!lane) {
      lane = { running: null, waiting: [] };
      this.#lanes.set(accountId, lane);
    }
    const previews = [lane.running, ...lane.waiting].filter((t): t is Turn => t?.purpose === 'preview');
    const replaced = purpose === 'preview' ? 'A newer preview of this campaign replaced this one.' : 'The campaign is being sent: its preview was stopped.';
    for (const turn of previews) turn.controller.abort(new AppError('campaign_file_busy', replaced));
    if (purpose === 'send' && lane.waiting.length >= this.maxWaitingSends) {
      this.#forgetIfIdle(accountId, lane);
      throw new AppError('campaign_file_busy', 'This account’s campaign files are being checked already; wait for that to finish and send again.');
    }
    const controller = new AbortController();
    const turn: Turn = { purpose, controller, grant: () => {} };
    const granted = new Promise<void>((resolve, reject) => {
      turn.grant = resolve;
      controller.signal.addEventListener(
        'abort',
        () => {
          const at = lane.waiting.indexOf(turn);
          if (at >= 0) {
            lane.waiting.splice(at, 1);
            reject(controller.signal.reason);
          }
        },
        { once: true },
      );
    });
    if (lane.running === null) {
      lane.running = turn;
      turn.grant();
    } else {
      lane.waiting.push(turn);
    }
    try {
      await granted;
    } catch (err) {
      this.#forgetIfIdle(accountId, lane);
      throw err;
    }
    let left = false;
    return {
      signal: controller.signal,
      leave: () => {
        if (left) return;
        left = true;
        const next = lane.waiting.shift() ?? null;
        lane.running = next;
        if (next) next.grant();
        else this.#forgetIfIdle(accountId, lane);
      },
    };
  }

  #forgetIfIdle(accountId: string, lane: Lane): void {
    if (lane.running === null && lane.waiting.length === 0 && this.#lanes.get(accountId) === lane) this.#lanes.delete(accountId);
  }
}

export const accountFileReads = new AccountFileReads();

/**
 * `source`, ending with the signal's reason as soon as it is aborted, even while a chunk is awaited
 * (an upload that stalls must not keep a replaced read, and the account's turn, alive). The
 * iteration is left where it stands, not closed: the caller drains what is left of the upload.
 */
export async function* abortable<T>(source: AsyncIterable<T>, signal: AbortSignal): AsyncGenerator<T> {
  signal.throwIfAborted();
  const iterator = source[Symbol.asyncIterator]();
  let onAbort: () => void = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  // Raced below; nobody else waits on it.
  aborted.catch(() => {});
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), aborted]);
      if (next.done) return;
      yield next.value;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
