/**
 * The delivery process: `pigeon serve` runs its workers (dispatch to the carrier, receipts,
 * webhooks, mail, sweepers) in a child process of its own, `pigeon worker` started with an IPC
 * channel, so that a flood of API requests never holds the event loop that hands messages to the
 * SMSC, and a second core does the delivering (docs/architecture.md has the measurements).
 *
 * The parent supervises it: a child that dies is started again (1 s, doubling to 30 s while it
 * keeps dying), `/ready` answers 503 with the reason while it is down, and the work it had claimed
 * goes back to its queue when its lease runs out, as for any worker process. The child leaves
 * when the channel closes, so a parent killed with SIGKILL takes its child with it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import type { CarrierStatus } from './carriers/carrier.ts';

/** What the parent tells the child, and the child the parent, over the IPC channel. */
type ToChild = { t: 'wake'; queues: string[] } | { t: 'metrics'; id: number };
type ToParent = { t: 'ready' } | { t: 'carrier'; status: CarrierStatus } | { t: 'metrics'; id: number; data: unknown };

const RESTART_MIN_MS = 1000;
const RESTART_MAX_MS = 30_000;
/** A child that ran this long before it died starts again after the shortest wait. */
const HEALTHY_AFTER_MS = 60_000;
const STOP_GRACE_MS = 12_000;
const METRICS_TIMEOUT_MS = 2000;
/**
 * Wake-ups go to the child at most this often. Each is a message over the IPC channel (about
 * 30 µs of the API process's event loop at 1,000 sends/s, where a commit, so a wake-up, came
 * nearly every turn), and the child's stages linger WORKER_LINGER_MS (20 ms) after the first one
 * anyway, so the ones between changed nothing but the cost.
 */
export const WAKE_INTERVAL_MS = 5;

export interface DeliveryProcess {
  /** Resolves once the first child has started its workers, or after `timeoutMs` (false then). */
  started(timeoutMs: number): Promise<boolean>;
  /** Tells the child that new work was committed in the parent (coalesced: at most one message per WAKE_INTERVAL_MS). */
  wake(queue: string): void;
  /** For `/ready`: whether the child runs, and its carrier's state. */
  status(): { workers: CarrierStatus; carrier: CarrierStatus };
  /** The child's metrics (prom-client JSON), for the parent's `/metrics`; null when it cannot answer. */
  metrics(): Promise<unknown[] | null>;
  /** The child's pid, or null while it is down. */
  pid(): number | null;
  stop(): Promise<void>;
}

export interface DeliveryProcessOptions {
  log: Logger;
  /** The command line that starts a child: node's path and its arguments. */
  command?: { file: string; args: string[] };
  env?: NodeJS.ProcessEnv;
}

/** `node [node flags] bin/pigeon worker`, as this process was started. */
function defaultCommand(): { file: string; args: string[] } {
  return { file: process.execPath, args: [...process.execArgv, process.argv[1]!, 'worker'] };
}

export function superviseDeliveryProcess(opts: DeliveryProcessOptions): DeliveryProcess {
  const { log } = opts;
  const command = opts.command ?? defaultCommand();
  let child: ChildProcess | null = null;
  let childReady = false;
  let carrier: CarrierStatus = { ready: false, detail: 'delivery process starting' };
  let down: string | null = 'starting';
  let stopping = false;
  let failures = 0;
  let restartTimer: NodeJS.Timeout | null = null;
  let firstReady: () => void;
  const firstStart = new Promise<void>((resolve) => (firstReady = resolve));
  const pendingWakes = new Set<string>();
  let flushScheduled = false;
  let flushedAt = -Infinity;
  let metricsId = 0;
  const metricsWaiting = new Map<number, (data: unknown) => void>();

  const send = (message: ToChild): boolean => {
    if (!child?.connected || !childReady) return false;
    child.send(message);
    return true;
  };

  const launch = () => {
    restartTimer = null;
    const startedAt = Date.now();
    const c = spawn(command.file, command.args, {
      env: { ...(opts.env ?? process.env), PIGEON_DELIVERY_CHILD: '1' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child = c;
    childReady = false;
    down = 'starting';
    c.on('message', (m: ToParent) => {
      if (m.t === 'ready') {
        childReady = true;
        down = null;
        log.info({ child_pid: c.pid }, 'delivery process started');
        firstReady();
        // Work committed while the child was starting waits for no idle interval.
        pendingWakes.add('dispatch').add('receipt').add('webhook').add('schedule');
        flush();
      } else if (m.t === 'carrier') carrier = m.status;
      else if (m.t === 'metrics') metricsWaiting.get(m.id)?.(m.data);
    });
    // A failed spawn (node missing, EAGAIN) is followed by 'exit' or 'error' alone.
    c.once('error', (err) => exited(c, startedAt, `could not be started (${err.message})`));
    c.once('exit', (code, signal) => exited(c, startedAt, signal ? `killed by ${signal}` : `exited with code ${code}`));
  };

  const exited = (c: ChildProcess, startedAt: number, why: string) => {
    if (child !== c) return;
    child = null;
    childReady = false;
    for (const resolve of metricsWaiting.values()) resolve(null);
    metricsWaiting.clear();
    if (stopping) return;
    failures = Date.now() - startedAt >= HEALTHY_AFTER_MS ? 1 : failures + 1;
    const wait = Math.min(RESTART_MAX_MS, RESTART_MIN_MS * 2 ** (failures - 1));
    down = `delivery process ${why}; restarting in ${Math.ceil(wait / 1000)} s`;
    carrier = { ready: false, detail: 'delivery process down' };
    log.error({ child_pid: c.pid, why, restart_in_ms: wait }, 'delivery process stopped; it will be restarted');
    restartTimer = setTimeout(launch, wait);
  };

  const flush = () => {
    flushScheduled = false;
    if (pendingWakes.size === 0) return;
    flushedAt = performance.now();
    if (send({ t: 'wake', queues: [...pendingWakes] })) pendingWakes.clear();
  };

  launch();

  return {
    started: (timeoutMs) =>
      Promise.race([firstStart.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref())]),
    wake(queue) {
      pendingWakes.add(queue);
      if (flushScheduled) return;
      flushScheduled = true;
      // The first wake-up after a quiet spell goes at the end of this turn; later ones join it.
      const wait = flushedAt + WAKE_INTERVAL_MS - performance.now();
      if (wait <= 0) setImmediate(flush);
      else setTimeout(flush, wait);
    },
    status: () => ({
      workers: down === null ? { ready: true, detail: 'ok' } : { ready: false, detail: down },
      carrier,
    }),
    metrics() {
      const id = ++metricsId;
      return new Promise((resolve) => {
        const timer = setTimeout(() => done(null), METRICS_TIMEOUT_MS);
        const done = (data: unknown) => {
          clearTimeout(timer);
          metricsWaiting.delete(id);
          resolve(Array.isArray(data) ? data : null);
        };
        metricsWaiting.set(id, done);
        if (!send({ t: 'metrics', id })) done(null);
      });
    },
    pid: () => (childReady ? (child?.pid ?? null) : null),
    async stop() {
      stopping = true;
      if (restartTimer) clearTimeout(restartTimer);
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      const gone = new Promise<void>((resolve) => c.once('exit', () => resolve()));
      // The child finishes its batch, unbinds from the SMSC and closes its store, as on SIGTERM.
      c.kill('SIGTERM');
      const timer = setTimeout(() => c.kill('SIGKILL'), STOP_GRACE_MS);
      await gone;
      clearTimeout(timer);
    },
  };
}

/**
 * The child's side: wake-ups and metrics requests from the parent, its carrier's state to the
 * parent, and a stop when the channel closes (the parent is gone, however it ended).
 */
export function answerSupervisor(parts: {
  wake(queue: string): void;
  carrierStatus(): CarrierStatus;
  metrics(): Promise<unknown>;
  stop(): void;
}): void {
  const send = (m: ToParent) => {
    if (process.connected) process.send!(m);
  };
  process.on('message', (m: ToChild) => {
    if (m.t === 'wake') for (const q of m.queues) parts.wake(q);
    else if (m.t === 'metrics') {
      parts.metrics().then(
        (data) => send({ t: 'metrics', id: m.id, data }),
        () => send({ t: 'metrics', id: m.id, data: null }),
      );
    }
  });
  process.once('disconnect', () => parts.stop());
  let last = '';
  const report = () => {
    const status = parts.carrierStatus();
    const text = JSON.stringify(status);
    if (text !== last) {
      last = text;
      send({ t: 'carrier', status });
    }
  };
  report();
  setInterval(report, 500).unref();
  send({ t: 'ready' });
}

/** Whether this process is a delivery process started by `pigeon serve`. */
export function isDeliveryChild(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.PIGEON_DELIVERY_CHILD === '1' && typeof process.send === 'function';
}
