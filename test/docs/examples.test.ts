/**
 * Every `curl` example of the README's walk-through and of docs/guides/*.md, run with bash against
 * a live `pigeon serve` (a throwaway SQLite database, a free port on 127.0.0.1), and each answer
 * compared with the one the page writes under the command:
 *
 *   curl -s $PIGEON_URL/v1/account -H "Authorization: Bearer $PIGEON_KEY"
 *   # {"status":"success","data":{"id":"acc_…", ...}}
 *
 * or in a ```json block right after the ```sh block. `# 201 {...}` also checks the HTTP status; a
 * curl with no written answer must answer 2xx. In the written answer, `"…"` stands for any value,
 * `"msg_…"` for any text starting `msg_`, and a timestamp for any timestamp; objects must have
 * exactly the keys written. A placeholder id in a command (`msg_…`, `bat_…`) becomes the last id
 * of that kind an earlier answer gave. Between commands of a guide, Sender IDs waiting for review
 * are approved (the operator's part, which the guides leave to the reader's operator). A block
 * this test cannot run (a long-running command) is marked by a `<!-- docs-test: skip -->` line
 * right before it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { walkthrough, type Walkthrough } from '../helpers/docs-walkthrough.ts';
import { ROOT } from '../helpers/processes.ts';

const HAS_JQ = spawnSync('jq', ['--version']).status === 0;

// ---- Reading the examples out of Markdown ---------------------------------------------------

interface Step {
  command: string;
  line: number;
  expected?: { status?: number; body: string };
}

interface Block {
  lang: string;
  code: string;
  line: number;
  /** Preceded by `<!-- docs-test: skip -->`: an example this test cannot run (a long-running command). */
  skip: boolean;
}

function fencedBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const before = lines.slice(0, i).filter((l) => l.trim() !== '').at(-1) ?? '';
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    blocks.push({ lang: open[1] ?? '', code: body.join('\n'), line: start + 1, skip: before.trim() === '<!-- docs-test: skip -->' });
  }
  return blocks;
}

/** Whether a comment line starts a written answer: `# {`, `# [` or `# 201 {`. */
const ANSWER = /^#\s(?:(\d{3})\s+)?([{[].*)$/;

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The commands of an ```sh block (continuation lines joined) with the answers written under them. */
function steps(block: Block, markdown: string, blocks: Block[]): Step[] {
  const out: Step[] = [];
  const lines = block.code.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trim() === '') continue;
    const answer = ANSWER.exec(line);
    if (answer && out.length > 0 && !out.at(-1)!.expected) {
      let body = answer[2]!;
      while (!parses(body) && i + 1 < lines.length && lines[i + 1]!.startsWith('#')) body += lines[++i]!.slice(1);
      out.at(-1)!.expected = { status: answer[1] ? Number(answer[1]) : undefined, body };
      continue;
    }
    if (line.trimStart().startsWith('#')) continue;
    let command = line;
    const first = i;
    while (command.endsWith('\\') && i + 1 < lines.length) command = `${command}\n${lines[++i]!}`;
    out.push({ command, line: block.line + 1 + first });
  }
  // An answer shown as a ```json block right after the ```sh block belongs to its last command.
  const next = blocks[blocks.indexOf(block) + 1];
  const last = out.at(-1);
  if (next && next.lang === 'json' && last && !last.expected) {
    const between = markdown.split('\n').slice(block.line + block.code.split('\n').length + 1, next.line - 1);
    if (between.every((l) => l.trim() === '')) last.expected = { body: next.code };
  }
  return out;
}

/** The ```sh blocks of a page that contain a curl command, as steps. */
function curlSteps(file: string): Step[] {
  const markdown = readFileSync(join(ROOT, file), 'utf8');
  const blocks = fencedBlocks(markdown);
  return blocks.filter((b) => (b.lang === 'sh' || b.lang === 'bash') && !b.skip && /\bcurl\b/.test(b.code)).flatMap((b) => steps(b, markdown, blocks));
}

// ---- Comparing answers -------------------------------------------------------------------------

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function differences(expected: unknown, actual: unknown, path = '$'): string[] {
  if (expected === '…') return [];
  if (typeof expected === 'string') {
    if (typeof actual !== 'string') return [`${path}: expected a string, got ${JSON.stringify(actual)}`];
    if (TIMESTAMP.test(expected)) return TIMESTAMP.test(actual) ? [] : [`${path}: expected a timestamp, got ${JSON.stringify(actual)}`];
    if (expected.includes('…')) {
      const pattern = new RegExp(`^${expected.split('…').map(escape).join('[\\s\\S]*')}$`);
      return pattern.test(actual) ? [] : [`${path}: ${JSON.stringify(actual)} does not fit ${JSON.stringify(expected)}`];
    }
    return expected === actual ? [] : [`${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`];
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [`${path}: expected an array, got ${JSON.stringify(actual)}`];
    if (expected.length !== actual.length) return [`${path}: expected ${expected.length} entries, got ${actual.length}`];
    return expected.flatMap((e, i) => differences(e, actual[i], `${path}[${i}]`));
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return [`${path}: expected an object, got ${JSON.stringify(actual)}`];
    const want = Object.keys(expected).sort();
    const got = Object.keys(actual).sort();
    if (want.join() !== got.join()) return [`${path}: keys ${JSON.stringify(got)}, the docs write ${JSON.stringify(want)}`];
    return want.flatMap((k) => differences((expected as Record<string, unknown>)[k], (actual as Record<string, unknown>)[k], `${path}.${k}`));
  }
  return Object.is(expected, actual) ? [] : [`${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`];
}

// ---- A bash session that keeps its variables between commands ----------------------------------

class Shell {
  readonly #child: ChildProcessWithoutNullStreams;
  #stdout = '';
  #stderr = '';
  #count = 0;

  constructor(env: NodeJS.ProcessEnv) {
    this.#child = spawn('bash', ['--noprofile', '--norc'], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.#child.stdout.on('data', (c: Buffer) => (this.#stdout += c.toString()));
    this.#child.stderr.on('data', (c: Buffer) => (this.#stderr += c.toString()));
    // curl reports each answer's HTTP status on stderr, so that `X=$(curl ...)` still captures only the body.
    this.#child.stdin.write(`curl() { command curl --max-time 30 -w '%{stderr}@@http %{http_code}\\n' "$@"; }\n`);
  }

  async run(command: string, timeoutMs = 60_000): Promise<{ stdout: string; stderr: string; rc: number; http: number[] }> {
    const marker = `@@done-${++this.#count}`;
    this.#stdout = '';
    this.#stderr = '';
    this.#child.stdin.write(`${command}\n__rc=$?; printf '\\n${marker} %s\\n' "$__rc"; printf '\\n${marker}\\n' >&2\n`);
    const deadline = Date.now() + timeoutMs;
    while (!(this.#stdout.includes(marker) && this.#stderr.includes(marker))) {
      if (this.#child.exitCode !== null) throw new Error(`bash exited (${this.#child.exitCode}) running:\n${command}\n${this.#stderr}`);
      if (Date.now() > deadline) throw new Error(`no end of:\n${command}\nstdout: ${this.#stdout}\nstderr: ${this.#stderr}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const stdout = this.#stdout.slice(0, this.#stdout.indexOf(`\n${marker}`));
    const rc = Number(new RegExp(`${marker} (\\d+)`).exec(this.#stdout)![1]);
    const stderr = this.#stderr.slice(0, this.#stderr.indexOf(`\n${marker}`));
    const http = [...stderr.matchAll(/@@http (\d{3})/g)].map((m) => Number(m[1]));
    return { stdout, stderr: stderr.replace(/@@http \d{3}\n?/g, ''), rc, http };
  }

  close(): void {
    this.#child.stdin.end();
    this.#child.kill();
  }
}

// ---- Running a page --------------------------------------------------------------------------

const ID = /"((?:msg|bat|sid|acc|evt|key|vsv|ver)_[0-9A-Za-z]+)"/g;

async function runPage(file: string, shell: Shell, opts: { ids?: Map<string, string>; beforeSend?: () => void } = {}): Promise<number> {
  const ids = opts.ids ?? new Map<string, string>();
  const list = curlSteps(file);
  let curls = 0;
  for (const step of list) {
    const where = `${file}:${step.line}`;
    // `export PIGEON_KEY=pk_live_...`: the reader pastes their own; the test has set it already.
    if (/^export\s+\w+=\S*\.\.\.\s*$/.test(step.command)) continue;
    const command = step.command.replace(/\b(msg|bat|sid|acc|evt|vsv|ver)_…/g, (whole, prefix: string) => {
      const id = ids.get(prefix);
      assert.ok(id, `${where}: ${whole} needs an earlier answer with a ${prefix}_ id`);
      return id;
    });
    if (/\/v1\/sms\/(send|bulk)\b/.test(command)) opts.beforeSend?.();
    const result = await shell.run(command);
    assert.equal(result.rc, 0, `${where}: exit ${result.rc}\n${command}\n${result.stdout}\n${result.stderr}`);
    for (const m of result.stdout.matchAll(ID)) ids.set(m[1]!.split('_')[0]!, m[1]!);
    if (!/\bcurl\b/.test(command)) continue;
    curls++;
    const status = result.http.at(-1);
    if (step.expected?.status !== undefined) assert.equal(status, step.expected.status, `${where}: HTTP status\n${result.stdout}`);
    else assert.ok(status !== undefined && status >= 200 && status < 300, `${where}: HTTP ${status}\n${command}\n${result.stdout}`);
    if (step.expected) {
      let actual: unknown;
      try {
        actual = JSON.parse(result.stdout);
      } catch {
        assert.fail(`${where}: the answer is not JSON:\n${result.stdout}`);
      }
      const expected = JSON.parse(step.expected.body);
      assert.deepEqual(differences(expected, actual), [], `${where}: the answer differs from the docs\n${command}\n${result.stdout}`);
    }
  }
  return curls;
}

const GUIDES = readdirSync(join(ROOT, 'docs/guides'))
  .filter((f) => f.endsWith('.md'))
  .sort()
  .map((f) => `docs/guides/${f}`);

describe('the curl examples of the README and the guides, against a live server', () => {
  let server: Walkthrough;
  before(async () => {
    server = await walkthrough({ prefix: 'pigeon-docs-', env: (url) => ({ PUBLIC_URL: url, SIM_DELIVERY_DELAY_MS: '0' }) });
    await server.serve();
  });
  after(() => server?.close());

  test('the examples are found and their written answers parse', () => {
    const readme = curlSteps('README.md');
    assert.ok(readme.filter((s) => /\bcurl\b/.test(s.command)).length >= 4, 'the walk-through has curl commands');
    for (const file of ['README.md', ...GUIDES]) {
      for (const s of curlSteps(file)) {
        if (s.expected) assert.doesNotThrow(() => JSON.parse(s.expected!.body), `${file}:${s.line}: the written answer is not JSON`);
      }
    }
  });

  test('README walk-through', { skip: HAS_JQ ? false : 'jq is not installed (apt-get install jq)' }, async () => {
    const shell = new Shell({ ...server.env });
    try {
      assert.ok((await runPage('README.md', shell)) >= 4);
    } finally {
      shell.close();
    }
  });

  for (const file of GUIDES) {
    const count = curlSteps(file).filter((s) => /\bcurl\b/.test(s.command)).length;
    test(file, { skip: count === 0 ? 'no curl example' : false }, async () => {
      const { accountId, key } = server.newCustomer();
      const ids = new Map<string, string>();
      // The operator's part: the number the page receives on.
      if (file.endsWith('receiving-and-opt-outs.md')) server.cli('number', 'assign', accountId, '+447700900123');
      if (file.endsWith('delivery-reports.md')) {
        // The page queries a batch with one failed message: a campaign to the simulator's
        // "fails after sent" number and to one that is delivered.
        const api = (path: string, body?: unknown) =>
          fetch(`${server.url}/v1${path}`, {
            method: body ? 'POST' : 'GET',
            headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
            body: body ? JSON.stringify(body) : undefined,
          }).then((r) => r.json() as Promise<Record<string, unknown>>);
        await server.approvedSender(accountId, key, 'Acme');
        const bulk = await api('/sms/bulk', { from: 'Acme', messages: [{ to: '+447911120000', message: 'Hi' }, { to: '+447911123456', message: 'Hi' }] });
        ids.set('bat', String(bulk.batch_id));
        const deadline = Date.now() + 30_000;
        while (((await api(`/sms/delivery-reports?batch_id=${String(bulk.batch_id)}&status=failed`)).pagination as { total: number }).total < 1) {
          assert.ok(Date.now() < deadline, 'the simulator reported the failure');
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      if (file.endsWith('scheduling.md') || file.endsWith('verify.md')) {
        // The page schedules from an approved Sender ID, as the quick start leaves the reader.
        await server.approvedSender(accountId, key, 'Acme');
      }
      const shell = new Shell({ ...server.env, PIGEON_URL: server.url, PIGEON_KEY: key });
      try {
        assert.equal(await runPage(file, shell, { ids, beforeSend: () => server.approvePending(accountId) }), count);
      } finally {
        shell.close();
      }
    });
  }

  test('authentication guide: trailing whitespace after the key never reaches Pigeon; a leading space or a stray character is 401', async () => {
    const { key } = server.newCustomer();
    const raw = (authorization: string) =>
      new Promise<number>((done, fail) => {
        const socket = connect(server.port, '127.0.0.1', () => {
          socket.write(`GET /v1/account HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${authorization}\r\nConnection: close\r\n\r\n`);
        });
        let answer = '';
        socket.on('data', (c: Buffer) => (answer += c.toString()));
        socket.on('end', () => done(Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1])));
        socket.on('error', fail);
      });
    assert.equal(await raw(`Bearer ${key}`), 200);
    assert.equal(await raw(`Bearer ${key}   \t `), 200, 'trailing spaces and tabs are dropped by the HTTP parser');
    assert.equal(await raw(`Bearer  ${key}`), 401, 'two spaces after Bearer');
    assert.equal(await raw(`Bearer ${key}x`), 401, 'a stray character');
    assert.equal(await raw(`Bearer ${key} x`), 401, 'text after a space');
  });
});
