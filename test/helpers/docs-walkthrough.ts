/**
 * A reader's machine for test/docs: a temporary directory with a SQLite database, a free port on
 * 127.0.0.1, the settings a reader of the README would have, `pigeon serve` and the operator's
 * commands, as the walk-throughs ask for them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, pigeonJson, servePigeon, spawnPigeon, type PigeonProcess } from './processes.ts';

export interface Walkthrough {
  /** The temporary directory (the database is pigeon.db in it); removed by close(). */
  dir: string;
  port: number;
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** The environment every command runs with. */
  env: NodeJS.ProcessEnv;
  /** Starts `pigeon serve` (with `extra` settings added) and waits until it answers /health. */
  serve(extra?: NodeJS.ProcessEnv): Promise<PigeonProcess>;
  /** Starts another `pigeon` command that keeps running (a webhook receiver, say); it is not awaited. */
  spawn(args: string[]): PigeonProcess;
  /** `pigeon <args> --json`, the operator's part; fails the test unless it exits 0. */
  cli<T = Record<string, any>>(...args: string[]): T;
  /** A fresh account as a guide's reader has it: "Acme Ltd", 100 credits and an all-scopes key. */
  newCustomer(opts?: { email?: string; label?: string }): { accountId: string; key: string };
  /** Registers a Sender ID with the reader's key through the API, and approves it as the operator would. */
  approvedSender(accountId: string, key: string, name: string): Promise<void>;
  /** Approves every Sender ID of the account that waits for review (the operator's part). */
  approvePending(accountId: string): void;
  /** Stops every process started here, then removes the directory. */
  close(): Promise<void>;
}

/**
 * Makes the directory and the settings; nothing runs yet. `env` adds settings (a page that the
 * README's reader would not set, such as PUBLIC_URL, is given here by the test that needs it).
 */
export async function walkthrough(opts: { prefix: string; env?: (url: string) => NodeJS.ProcessEnv }): Promise<Walkthrough> {
  const dir = mkdtempSync(join(tmpdir(), opts.prefix));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // As from the reader's shell: nothing the test runner passes down to its children.
    NODE_OPTIONS: '',
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: `sqlite:${join(dir, 'pigeon.db')}`,
    LOG_LEVEL: 'warn',
    SMTP_URL: '',
    ...opts.env?.(url),
  };
  const started: PigeonProcess[] = [];
  const cli = <T = Record<string, any>>(...args: string[]): T => pigeonJson<T>(env, ...args);
  const approvePending = (accountId: string) => {
    const pending = cli<{ data: { id: string }[] }>('sender-id', 'list', '--status', 'pending', '--account', accountId);
    for (const s of pending.data) cli('sender-id', 'approve', s.id);
  };
  return {
    dir,
    port,
    url,
    env,
    async serve(extra = {}) {
      const server = await servePigeon(url, { ...env, ...extra });
      started.push(server);
      return server;
    },
    spawn(args) {
      const child = spawnPigeon(args, env);
      started.push(child);
      return child;
    },
    cli,
    newCustomer({ email = `docs-${Math.random().toString(36).slice(2)}@example.com`, label = 'docs' } = {}) {
      const account = cli<{ id: string }>('account', 'create', '--name', 'Acme Ltd', '--email', email, '--credits', '100');
      return { accountId: account.id, key: cli<{ key: string }>('key', 'create', account.id, '--label', label).key };
    },
    async approvedSender(accountId, key, name) {
      const registered = await fetch(`${url}/v1/sms/sender-ids`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name }),
      });
      assert.equal(registered.status, 201, await registered.text());
      approvePending(accountId);
    },
    approvePending,
    async close() {
      for (const p of started.reverse()) await p.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
