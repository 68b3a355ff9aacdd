/**
 * The dashboard in a real browser, for test/e2e: `pigeon serve` as a child process on a free port
 * of 127.0.0.1 with a throwaway SQLite file, and Debian's chromium (headless) driven by
 * playwright-core. `CHROMIUM_PATH` overrides /usr/bin/chromium.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { freePort, pigeonJson, servePigeon, type PigeonProcess } from './processes.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export interface BrowserStack {
  /** `http://127.0.0.1:<port>`, the server's PUBLIC_URL. */
  base: string;
  browser: Browser;
  /** `pigeon <args> --json` against the same database (the operator's part); fails unless it exits 0. */
  cli<T = Record<string, any>>(...args: string[]): T;
  close(): Promise<void>;
}

/**
 * Migrates a fresh database, creates the operator when one is given, starts the server and the
 * browser. `env` adds to (or overrides) the server's settings; screenshots go to `shots`.
 */
export async function startBrowserStack(opts: {
  shots: string;
  env?: Record<string, string>;
  operator?: { email: string; password: string };
}): Promise<BrowserStack> {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-e2e-'));
  mkdirSync(opts.shots, { recursive: true });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_URL: base,
    DATABASE_URL: `sqlite:${join(dir, 'pigeon.db')}`,
    LOG_LEVEL: 'warn',
    SMTP_URL: '',
    ...opts.env,
  };
  const cli = <T = Record<string, any>>(...args: string[]): T => pigeonJson<T>(env, ...args);
  let server: PigeonProcess | undefined;
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close();
    // A server that died during the test is why its pages failed: say what it wrote.
    if (server && server.child.exitCode !== null) process.stderr.write(`pigeon serve exited with ${server.child.exitCode}:\n${server.output()}\n`);
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // Only serve and migrate create the database; operator create needs it to exist.
    cli('migrate');
    if (opts.operator) cli('operator', 'create', '--email', opts.operator.email, '--password', opts.operator.password);
    server = await servePigeon(base, env);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  } catch (err) {
    await close();
    throw err;
  }
  return { base, browser, cli, close };
}

/** A new browser context and its first page, which accepts every confirm() (the pages ask before a removal). */
export async function openPage(browser: Browser, options: BrowserContextOptions): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  page.on('dialog', (d) => void d.accept());
  return { context, page };
}

/** Fills the sign-up form (the page must be on it) and waits for the new owner's overview. */
export async function signUp(page: Page, base: string, owner: { name: string; email: string; password: string }): Promise<void> {
  await page.getByLabel('Company or project name').fill(owner.name);
  await page.getByLabel('E-mail').fill(owner.email);
  await page.getByLabel('Password').fill(owner.password);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.waitForURL(`${base}/dashboard`);
}

/** Fills a log-in form (the owner's or the operator's: the same labels) and submits it. */
export async function logIn(page: Page, who: { email: string; password: string }): Promise<void> {
  await page.getByLabel('E-mail').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Log in' }).click();
}
