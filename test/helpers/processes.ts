/** Real `pigeon` processes for end-to-end tests: spawn, wait until started, stop or kill. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

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
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Starts `./bin/pigeon <args>` and resolves once it logged "pigeon started". */
export async function startPigeon(args: string[], env: Record<string, string>, timeoutMs = 30_000): Promise<PigeonProcess> {
  const child = spawn('./bin/pigeon', args, { env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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
  return {
    child,
    output: () => out,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      return exited;
    },
    async kill(signal = 'SIGKILL') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      await exited;
    },
  };
}
