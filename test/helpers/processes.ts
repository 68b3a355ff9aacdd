/** Real `pigeon` processes for end-to-end tests: spawn, wait until started, stop or kill. */
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { waitFor } from './wait-for.ts';

/** The repository's root: where `./bin/pigeon` is run from, whatever the test runner's directory. */
export const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface PigeonProcess {
  child: ChildProcess;
  /** Everything the process wrote, for diagnostics. */
  output(): string;
  /** SIGTERM, then wait for the exit code. */
  stop(): Promise<number | null>;
  /**
   * Signals the process and the delivery processes it started (`pigeon serve`), all at once, as a
   * crash, an OOM kill of the group or a supervisor's SIGKILL would, then waits for its exit.
   */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** The same signal to the whole tree, synchronously (from inside an event callback). */
  signalAll(signal?: NodeJS.Signals): void;
  /** The pids of the delivery processes `pigeon serve` announced, in order. */
  deliveryPids(): number[];
}

/** Spawns `./bin/pigeon <args>` with exactly `env`, keeping its output; it is not awaited. */
export function spawnPigeon(args: string[], env: NodeJS.ProcessEnv): PigeonProcess {
  const child = spawn('./bin/pigeon', args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  return handle(child, () => out);
}

function handle(child: ChildProcess, output: () => string): PigeonProcess {
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deliveryPids = () => [...output().matchAll(/"child_pid":(\d+),"msg":"delivery process started"/g)].map((m) => Number(m[1]));
  const signalAll = (signal: NodeJS.Signals = 'SIGKILL') => {
    for (const pid of deliveryPids()) {
      try {
        process.kill(pid, signal);
      } catch {
        // Already gone (restarted, or stopped with its parent).
      }
    }
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  return {
    deliveryPids,
    signalAll,
    child,
    output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      return exited;
    },
    async kill(signal = 'SIGKILL') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      signalAll(signal);
      await exited;
    },
  };
}

/**
 * Starts `pigeon serve` with exactly `env` and resolves once `GET /health` on `url` answers 200.
 * Unlike startPigeon it does not need the start banner, so it works at any LOG_LEVEL (a quiet
 * server keeps a long browser or docs run from filling memory with request lines).
 */
export async function servePigeon(url: string, env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<PigeonProcess> {
  const server = spawnPigeon(['serve'], env);
  try {
    await waitFor(
      async () => {
        if (server.child.exitCode !== null) throw new Error(`pigeon serve exited with ${server.child.exitCode}:\n${server.output()}`);
        return (await fetch(`${url}/health`).catch(() => null))?.ok;
      },
      { timeout: timeoutMs, interval: 50, message: () => `pigeon serve to answer on ${url}:\n${server.output()}` },
    );
  } catch (err) {
    await server.kill();
    throw err;
  }
  return server;
}

/** Runs `pigeon <args> --json` to completion with `env`; fails the test unless it exits 0, and returns the parsed output. */
export function pigeonJson<T = Record<string, any>>(env: NodeJS.ProcessEnv, ...args: string[]): T {
  const result = spawnSync('./bin/pigeon', [...args, '--json'], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(result.status, 0, `pigeon ${args.join(' ')}: ${result.stderr}${result.stdout}`);
  return JSON.parse(result.stdout) as T;
}

/**
 * Runs `./bin/pigeon <args> --json` without blocking the test's event loop (so a server in the
 * same test keeps answering) and gives its exit code, output and parsed JSON (null on a failure).
 */
export async function pigeonCli(env: NodeJS.ProcessEnv, ...args: string[]): Promise<{ code: number; json: any; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)('./bin/pigeon', [...args, '--json'], { cwd: ROOT, env });
    return { code: 0, json: JSON.parse(stdout), stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, json: null, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Starts `./bin/pigeon <args>` and resolves once it logged "pigeon started". */
export async function startPigeon(args: string[], env: Record<string, string>, timeoutMs = 30_000, nodeArgs: string[] = []): Promise<PigeonProcess> {
  // Node's own flags (a CPU profile, say) need node named first; NODE_OPTIONS refuses some of them.
  const [command, argv] = nodeArgs.length ? [process.execPath, [...nodeArgs, './bin/pigeon', ...args]] : ['./bin/pigeon', args];
  const child = spawn(command, argv, { env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`pigeon ${args.join(' ')} did not start:\n${out}`)), timeoutMs);
    let started = false;
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      // Searched only until the banner came: scanning the whole, growing output on every chunk
      // would cost this process more CPU than the server's logging under a benchmark's load.
      if (!started && out.includes('"msg":"pigeon started"')) {
        started = true;
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`pigeon ${args.join(' ')} exited with ${code}:\n${out}`));
    });
  });
  return handle(child, () => out);
}

/**
 * Stops child processes that are not Pigeon (Kannel's boxes), last started first: SIGTERM, and
 * SIGKILL for one still running 3 s later.
 */
export async function stopChildren(children: ChildProcess[]): Promise<void> {
  for (const c of [...children].reverse()) {
    if (c.exitCode !== null || c.signalCode !== null) continue;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3000))]);
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
}
