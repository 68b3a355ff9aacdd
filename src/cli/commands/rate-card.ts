import { open } from 'node:fs/promises';
import type { CardDiff, DiffRow } from '../../domain/rate-card.ts';
import { exportCard, importCard, listCards, MAX_RATE_CSV_BYTES, setAccountRateCard, showCard, timeArgument } from '../../services/pricing/rate-cards.ts';
import { arg, CommandFailure, type Command } from '../command.ts';
import { table } from '../output.ts';

/** Reads the file, refusing one over the import's bound before reading it whole. */
async function readCardFile(path: string): Promise<string> {
  let file;
  try {
    file = await open(path, 'r');
  } catch (err) {
    throw new CommandFailure('file_unreadable', `Cannot read ${path}: ${(err as Error).message}`, 1);
  }
  try {
    const { size } = await file.stat();
    if (size > MAX_RATE_CSV_BYTES) throw new CommandFailure('payload_too_large', `${path} is ${size} bytes; a rate card file is at most ${MAX_RATE_CSV_BYTES} bytes.`, 1);
    return await file.readFile('utf8');
  } finally {
    await file.close();
  }
}

const price = (p: DiffRow['credits_per_segment'] | undefined) => (p === null || p === undefined ? '-' : String(p));

function describeDiff(diff: CardDiff): string {
  const lines = [
    `added ${diff.added.length}, raised ${diff.raised.length}, lowered ${diff.lowered.length}, removed ${diff.removed.length}, unchanged ${diff.unchanged}`,
  ];
  // The first rows of each list: a card of 100,000 prefixes is read in its JSON, not on a screen.
  for (const [what, rows] of [['added', diff.added], ['raised', diff.raised], ['lowered', diff.lowered], ['removed', diff.removed]] as const) {
    for (const r of rows.slice(0, 20)) lines.push(`  ${what.padEnd(8)} ${r.prefix.padEnd(17)} ${r.previous === undefined ? '' : `${price(r.previous)} -> `}${price(r.credits_per_segment)}`);
    if (rows.length > 20) lines.push(`  ${what.padEnd(8)} … and ${rows.length - 20} more`);
  }
  return lines.join('\n');
}

export const rateCardCommands: Record<string, Command> = {
  'rate-card list': {
    usage: 'rate-card list',
    description: 'List the rate cards, with their stored entries and the accounts using each.',
    async run(ctx, _args, out) {
      const cards = await listCards(ctx);
      const rows = cards.map((c) => ({ name: c.name, entries: c.entries, accounts: c.accounts, updated_at: new Date(c.updated_at).toISOString() }));
      out.print({ data: rows }, table(rows, ['name', 'entries', 'accounts', 'updated_at'], 'rate cards'));
    },
  },
  'rate-card show': {
    usage: 'rate-card show CARD [--at TIME] [--csv]',
    description: 'Show a card as it stands now (or at TIME, RFC 3339), and the changes dated later; --csv prints it as the file an import reads.',
    options: { at: 'string', csv: 'boolean' },
    optionHelp: { at: 'the moment to show the card at (RFC 3339); default now', csv: 'print the card as CSV (prefix,credits_per_segment)' },
    async run(ctx, { positionals, values }, out) {
      const name = arg(positionals, 0, 'CARD');
      const at = timeArgument(values.at as string | undefined, '--at');
      if (values.csv === true) {
        process.stdout.write(await exportCard(ctx, name, at));
        return;
      }
      const shown = await showCard(ctx, name, at);
      const text = [
        `Rate card ${shown.card} at ${new Date(shown.at).toISOString()}:`,
        table(shown.entries.map((e) => ({ ...e })), ['prefix', 'credits_per_segment', 'effective_from'], 'entries'),
        ...(shown.scheduled.length > 0 ? ['', 'Dated changes:', table(shown.scheduled.map((s) => ({ ...s, credits_per_segment: price(s.credits_per_segment) })), ['prefix', 'credits_per_segment', 'effective_from'])] : []),
      ].join('\n');
      out.print({ card: shown.card, entries: shown.entries }, text);
    },
  },
  'rate-card import': {
    usage: 'rate-card import CARD FILE [--replace] [--effective-from TIME] [--dry-run]',
    description:
      'Import prices from a CSV file (header prefix,credits_per_segment; a price is a whole number of credits per segment or `blocked`), creating the card if new. It merges unless --replace (then prefixes not in the file are removed). Prints what is added, raised, lowered, removed and unchanged; a bad line changes nothing.',
    options: { replace: 'boolean', 'effective-from': 'string', 'dry-run': 'boolean' },
    optionHelp: {
      replace: 'the file is the whole card: prefixes not in it are removed',
      'effective-from': 'when the changes take effect (RFC 3339); default now',
      'dry-run': 'show the difference, change nothing',
    },
    async run(ctx, { positionals, values }, out) {
      const name = arg(positionals, 0, 'CARD');
      const path = arg(positionals, 1, 'FILE');
      const effectiveFrom = timeArgument(values['effective-from'] as string | undefined, '--effective-from');
      const csv = await readCardFile(path);
      const result = await importCard(ctx, name, csv, {
        replace: values.replace === true,
        dryRun: values['dry-run'] === true,
        ...(effectiveFrom === undefined ? {} : { effectiveFrom }),
      });
      const head = result.applied
        ? `${result.created ? 'Created' : 'Updated'} rate card ${result.card}, effective ${result.effective_from}:`
        : `Dry run: importing into ${result.card}${result.created ? ' (a new card)' : ''}, effective ${result.effective_from}, would change:`;
      out.print(result.diff, `${head}\n${describeDiff(result.diff)}`);
    },
  },
  'account set-rate-card': {
    usage: 'account set-rate-card ID CARD',
    description: 'Price the account’s messages from CARD (`default` to go back). Messages already accepted keep their price.',
    async run(ctx, { positionals }, out) {
      const set = await setAccountRateCard(ctx, arg(positionals, 0, 'ID'), arg(positionals, 1, 'CARD'));
      out.print(set, `Account ${set.id} now uses rate card ${set.rate_card}.`);
    },
  },
};
