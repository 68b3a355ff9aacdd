/**
 * Runs test/smpp/interop/smsc.pl (Net::SMPP) as a child process on 127.0.0.1 and follows its
 * event lines. Fails loudly when Perl's Net::SMPP is missing: .ci/run installs it
 * (`apt-get install libnet-smpp-perl`).
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'smsc.pl');

export interface SmscEvent {
  ev: string;
  [field: string]: unknown;
}

export interface SubmitEvent extends SmscEvent {
  ev: 'submit';
  bind: number;
  seq: number;
  action: string;
  /** The id answered, or null when the submit was refused or never answered. */
  id: string | null;
  status?: number;
  src: string;
  dst: string;
  esm: number;
  dcs: number;
  rd: number;
  /** short_message, hex. */
  sm: string;
}

export type SubmitAction = 'ok' | 'reset' | 'halfclose' | 'silent' | 'silent-reset' | 'receipt-first' | 'receipt-tlv-first' | 'hold' | 'receipt-hold' | `status:${number}`;

export function requireNetSmpp(): void {
  const probe = spawnSync('perl', ['-MNet::SMPP', '-e1'], { encoding: 'utf8' });
  if (probe.status !== 0) {
    throw new Error(
      `The SMPP interoperability tests need Perl's Net::SMPP: apt-get install -y libnet-smpp-perl (.ci/run does). perl said: ${probe.error?.message ?? probe.stderr.trim()}`,
    );
  }
}

export class PerlSmsc {
  readonly events: SmscEvent[] = [];
  port = 0;
  #child: ChildProcessWithoutNullStreams;
  #stderr = '';
  #exited = false;

  private constructor(child: ChildProcessWithoutNullStreams) {
    this.#child = child;
    child.stderr.on('data', (d: Buffer) => (this.#stderr += d.toString()));
    child.on('exit', () => (this.#exited = true));
    createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        this.events.push(JSON.parse(line) as SmscEvent);
      } catch {
        this.events.push({ ev: 'unparsed', line });
      }
    });
  }

  static async start(opts: { ids?: 'decimal' | 'hex'; firstId?: number; receiptIds?: 'same' | 'other'; systemId?: string; password?: string } = {}): Promise<PerlSmsc> {
    requireNetSmpp();
    const args = [SCRIPT, '--ids', opts.ids ?? 'decimal', '--first-id', String(opts.firstId ?? 1), '--receipt-ids', opts.receiptIds ?? 'same'];
    args.push('--system-id', opts.systemId ?? 'pigeon', '--password', opts.password ?? 'secret');
    const smsc = new PerlSmsc(spawn('perl', args));
    const listening = await smsc.waitFor((e) => e.ev === 'listening', 'the Perl SMSC to listen');
    smsc.port = Number(listening.port);
    return smsc;
  }

  /** Waits (polling, with a deadline) for an event; returns the first match. */
  async waitFor(match: (e: SmscEvent) => boolean, what: string, timeoutMs = 10_000): Promise<SmscEvent> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.find(match);
      if (found) return found;
      if (this.#exited) throw new Error(`the Perl SMSC exited while waiting for ${what}: ${this.#stderr}`);
      if (Date.now() > until) throw new Error(`timed out waiting for ${what}; SMSC events: ${JSON.stringify(this.events.slice(-20))}; stderr: ${this.#stderr}`);
      await sleep(5);
    }
  }

  /** Sends a command and waits until the SMSC has carried it out. */
  async command(cmd: Record<string, unknown>): Promise<void> {
    const before = this.events.length;
    this.#child.stdin.write(`${JSON.stringify(cmd)}\n`);
    await this.waitFor((e) => this.events.indexOf(e) >= before && e.ev === 'ok' && e.cmd === cmd.cmd, `the SMSC to do ${String(cmd.cmd)}`);
  }

  /**
   * Sends a command and blocks this process's event loop until the SMSC has carried it out (it
   * creates a marker file): whatever the SMSC wrote meanwhile is waiting, unread, on Pigeon's
   * socket when the loop resumes, as under load.
   */
  commandWhileBusy(cmd: Record<string, unknown>, opts: { busyUntil?: number } = {}): void {
    const mark = join(mkdtempSync(join(tmpdir(), 'perl-smsc-')), 'done');
    this.#child.stdin.write(`${JSON.stringify({ ...cmd, mark })}\n`);
    const until = Date.now() + 5000;
    while (!existsSync(mark) || Date.now() < (opts.busyUntil ?? 0)) {
      if (Date.now() > until) throw new Error(`the SMSC did not do ${String(cmd.cmd)} in time`);
    }
  }

  next(...actions: SubmitAction[]): Promise<void> {
    return this.command({ cmd: 'next', actions });
  }

  receipt(id: string, stat = 'DELIVRD', format: 'text' | 'tlv' | 'both' = 'text'): Promise<void> {
    return this.command({ cmd: 'receipt', id, stat, format });
  }

  get submits(): SubmitEvent[] {
    return this.events.filter((e): e is SubmitEvent => e.ev === 'submit');
  }

  submitsTo(destination: string): SubmitEvent[] {
    return this.submits.filter((s) => s.dst === destination);
  }

  count(ev: string): number {
    return this.events.filter((e) => e.ev === ev).length;
  }

  async stop(): Promise<void> {
    if (this.#exited) return;
    const exited = once(this.#child, 'exit');
    this.#child.stdin.end(`${JSON.stringify({ cmd: 'quit' })}\n`);
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(timer);
  }
}

/** GSM 03.38 default alphabet and its extension table, written out here rather than taken from Pigeon. */
const GSM_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\x1bÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
const GSM_EXTENSION: Record<number, string> = { 0x0a: '\f', 0x14: '^', 0x28: '{', 0x29: '}', 0x2f: '\\', 0x3c: '[', 0x3d: '~', 0x3e: ']', 0x40: '|', 0x65: '€' };

/** A submit's short_message split into its concatenation header (if any) and its decoded text. */
export function decodeSubmit(s: SubmitEvent): { ref: number | null; total: number; seq: number; text: string } {
  let bytes = Buffer.from(s.sm, 'hex');
  let ref: number | null = null;
  let total = 1;
  let seq = 1;
  if (s.esm & 0x40) {
    const udhl = bytes[0]!;
    const udh = bytes.subarray(1, 1 + udhl);
    if (udh[0] === 0x00 && udh[1] === 3) [ref, total, seq] = [udh[2]!, udh[3]!, udh[4]!];
    bytes = bytes.subarray(1 + udhl);
  }
  let text = '';
  if (s.dcs === 8) {
    text = Buffer.from(bytes).swap16().toString('utf16le');
  } else {
    for (let i = 0; i < bytes.length; i++) {
      if (bytes[i] === 0x1b) text += GSM_EXTENSION[bytes[++i]!] ?? '?';
      else text += GSM_BASIC[bytes[i]!] ?? '?';
    }
  }
  return { ref, total, seq, text };
}
