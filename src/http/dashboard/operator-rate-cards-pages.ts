/**
 * The operator console's Rate cards pages (DECISIONS.md §11): the cards with their entries, a CSV
 * upload that shows the difference it makes before anything changes, applying it, and the export
 * of a card as CSV, as `pigeon rate-card list|show|import` do. The difference page carries the
 * uploaded file in its Apply form, so applying needs nothing kept between the two requests and
 * works whichever process answers it; apply compares again in its own transaction.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acting } from '../acting.ts';
import type { CardDiff, DiffRow } from '../../domain/rate-card.ts';
import { AppError } from '../../errors/catalogue.ts';
import type { Context } from '../../services/context.ts';
import { exportCard, importCard, listCards, MAX_RATE_CSV_BYTES, showCard, timeArgument } from '../../services/pricing/rate-cards.ts';
import { html } from '../html.ts';
import { alert, csrfField, table, when } from './layout.ts';
import type { OperatorPageKit } from './operator-numbers-pages.ts';
import { formParts, seeOther } from './session-guard.ts';

/** Rows of each list shown on the difference page; the counts are always whole. */
const DIFF_ROWS_SHOWN = 200;
/** Entries shown on a card's page; the CSV export has them all. */
const ENTRIES_SHOWN = 1000;
const UPLOAD_LIMITS = { fileSize: MAX_RATE_CSV_BYTES, files: 1, fields: 8, fieldSize: MAX_RATE_CSV_BYTES, parts: 10 };

interface Upload {
  card: string;
  effectiveFrom: string;
  replace: boolean;
  csv: string;
}

async function readUpload(request: FastifyRequest): Promise<Upload> {
  const values: Record<string, string> = {};
  let csv: string | null = null;
  try {
    for await (const part of formParts(request)) {
      if (part.type === 'file') {
        const bytes = await part.toBuffer();
        if (part.file.truncated) throw new AppError('payload_too_large', `A rate card file is at most ${MAX_RATE_CSV_BYTES / 1024 / 1024} MiB.`);
        if (part.filename || bytes.length > 0) csv = bytes.toString('utf8');
      } else if (typeof part.value === 'string') {
        values[part.fieldname] = part.value;
      }
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    const code = (err as { code?: string }).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE' || code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT') {
      throw new AppError('payload_too_large', `A rate card file is at most ${MAX_RATE_CSV_BYTES / 1024 / 1024} MiB.`);
    }
    throw new AppError('invalid_request', 'The upload could not be read; please try again.');
  }
  csv ??= values.csv ?? null;
  if (csv === null || csv === '') throw new AppError('invalid_rate_card', 'Choose a CSV file with the header prefix,credits_per_segment.');
  return { card: (values.card ?? '').trim(), effectiveFrom: (values.effective_from ?? '').trim(), replace: values.replace === 'on' || values.replace === '1', csv };
}

const price = (p: DiffRow['credits_per_segment'] | undefined) => (p === null || p === undefined ? '—' : String(p));

function diffTables(diff: CardDiff) {
  const lists = [
    ['added', 'Added', diff.added],
    ['raised', 'Raised', diff.raised],
    ['lowered', 'Lowered', diff.lowered],
    ['removed', 'Removed', diff.removed],
  ] as const;
  return lists.map(([key, label, rows]) =>
    rows.length === 0
      ? html``
      : html`<section id="diff-${key}">${table(
          `${label}: ${rows.length.toLocaleString('en')}${rows.length > DIFF_ROWS_SHOWN ? ` (the first ${DIFF_ROWS_SHOWN} shown)` : ''}`,
          ['Prefix', 'Before', 'After'],
          rows.slice(0, DIFF_ROWS_SHOWN).map((r) => [html`<code>${r.prefix}</code>`, price(r.previous), price(r.credits_per_segment)]),
          '',
        )}</section>`,
  );
}

function summaryLine(diff: CardDiff) {
  const n = (x: number) => x.toLocaleString('en');
  return `${n(diff.added.length)} added, ${n(diff.raised.length)} raised, ${n(diff.lowered.length)} lowered, ${n(diff.removed.length)} removed, ${n(diff.unchanged)} unchanged`;
}

export function operatorRateCardsPages(app: FastifyInstance, ctx: Context, kit: OperatorPageKit): void {
  const listPage = async (request: FastifyRequest, reply: FastifyReply, message?: { text: string; kind: 'ok' | 'error' }) => {
    const csrf = kit.csrf(request);
    const cards = await listCards(ctx);
    const rows = cards.map((c) => [
      html`<a href="/operator/rate-cards/${encodeURIComponent(c.name)}"><strong>${c.name}</strong></a>`,
      c.entries.toLocaleString('en'),
      c.accounts.toLocaleString('en'),
      when(c.updated_at),
      html`<a href="/operator/rate-cards/${encodeURIComponent(c.name)}/export" download="${c.name}.csv" aria-label="Export ${c.name} as CSV">Export CSV</a>`,
    ]);
    return kit.render(
      request,
      reply,
      'Rate cards',
      'rate-cards',
      html`${message ? alert(message.text, message.kind) : html``}
<p>Each account is priced from one card (<code>default</code> unless <code>pigeon account set-rate-card ID CARD</code>). A destination's price is its longest matching prefix's; messages keep the price they were accepted at.</p>
${table('Rate cards', ['Card', 'Stored entries', 'Accounts', 'Last changed', ''], rows, 'No rate cards.')}
<section><h2>Import a CSV</h2>
<form method="post" action="/operator/rate-cards/preview" enctype="multipart/form-data" id="rate-card-upload">${csrfField(csrf)}
<label for="card">Card (new or existing)</label><input id="card" name="card" required maxlength="64" pattern="[A-Za-z0-9][A-Za-z0-9_\\-]*">
<label for="effective-from">Effective from (RFC 3339, such as 2026-12-01T00:00:00Z)</label><input id="effective-from" name="effective_from" maxlength="40" aria-describedby="effective-hint">
<p class="hint" id="effective-hint">Empty: as soon as it is applied.</p>
<label><input type="checkbox" name="replace" id="replace"> Replace the card: prefixes not in the file are removed</label>
<label for="file">CSV file: header <code>prefix,credits_per_segment</code>, a price in credits per segment or <code>blocked</code></label><input id="file" name="file" type="file" accept=".csv,text/csv" required>
<div class="actions"><button type="submit">Show the difference</button></div></form></section>`,
    );
  };

  const failing = async (request: FastifyRequest, reply: FastifyReply, action: () => Promise<unknown>) => {
    try {
      return await action();
    } catch (err) {
      if (err instanceof AppError && err.status < 500) {
        reply.code(err.status);
        return listPage(request, reply, { text: err.message, kind: 'error' });
      }
      throw err;
    }
  };

  app.get<{ Querystring: { done?: string } }>('/rate-cards', async (request, reply) =>
    listPage(request, reply, typeof request.query.done === 'string' ? { text: request.query.done.slice(0, 300), kind: 'ok' } : undefined),
  );

  app.post('/rate-cards/preview', { config: { multipartLimits: UPLOAD_LIMITS } }, async (request, reply) =>
    failing(request, reply, async () => {
      const upload = await readUpload(request);
      const at = timeArgument(upload.effectiveFrom, 'Effective from');
      const result = await importCard(acting(ctx, request), upload.card, upload.csv, { replace: upload.replace, dryRun: true, ...(at === undefined ? {} : { effectiveFrom: at }) });
      const csrf = kit.csrf(request);
      return kit.render(
        request,
        reply,
        'Rate card difference',
        'rate-cards',
        html`<p id="diff-summary">Importing into <strong>${result.card}</strong>${result.created ? ' (a new card)' : ''}${upload.replace ? ', replacing it' : ''}, effective ${upload.effectiveFrom === '' ? 'when applied' : result.effective_from}: <strong>${summaryLine(result.diff)}</strong>. Nothing has changed yet.</p>
<form method="post" action="/operator/rate-cards/apply" enctype="multipart/form-data" id="rate-card-apply">${csrfField(csrf)}
<input type="hidden" name="card" value="${result.card}"><input type="hidden" name="effective_from" value="${upload.effectiveFrom}">${upload.replace ? html`<input type="hidden" name="replace" value="1">` : ''}
<textarea name="csv" hidden>${upload.csv}</textarea>
<div class="actions"><button type="submit" id="apply">Apply</button> <a href="/operator/rate-cards">Cancel</a></div></form>
${diffTables(result.diff)}`,
      );
    }),
  );

  app.post('/rate-cards/apply', { config: { multipartLimits: UPLOAD_LIMITS } }, async (request, reply) =>
    failing(request, reply, async () => {
      const upload = await readUpload(request);
      const at = timeArgument(upload.effectiveFrom, 'Effective from');
      const result = await importCard(acting(ctx, request), upload.card, upload.csv, { replace: upload.replace, ...(at === undefined ? {} : { effectiveFrom: at }) });
      return seeOther(reply, `/operator/rate-cards?done=${encodeURIComponent(`Rate card ${result.card}: ${summaryLine(result.diff)}, effective ${result.effective_from}.`)}`);
    }),
  );

  app.get<{ Params: { name: string } }>('/rate-cards/:name/export', async (request, reply) => {
    const csv = await exportCard(ctx, request.params.name);
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="${request.params.name}.csv"`)
      .send(csv);
  });

  app.get<{ Params: { name: string } }>('/rate-cards/:name', async (request, reply) => {
    const card = await showCard(ctx, request.params.name);
    const rows = card.entries.slice(0, ENTRIES_SHOWN).map((e) => [html`<code>${e.prefix}</code>`, String(e.credits_per_segment), when(Date.parse(e.effective_from))]);
    const dated = card.scheduled.slice(0, ENTRIES_SHOWN).map((e) => [html`<code>${e.prefix}</code>`, price(e.credits_per_segment), when(Date.parse(e.effective_from))]);
    return kit.render(
      request,
      reply,
      `Rate card ${card.card}`,
      'rate-cards',
      html`<p><a href="/operator/rate-cards">All rate cards</a> · <a href="/operator/rate-cards/${encodeURIComponent(card.card)}/export" download="${card.card}.csv">Export CSV</a></p>
${table(`In effect now: ${card.entries.length.toLocaleString('en')} prefixes${card.entries.length > ENTRIES_SHOWN ? ` (the first ${ENTRIES_SHOWN} shown; the export has them all)` : ''}`, ['Prefix', 'Credits per segment', 'Since'], rows, 'No prefix is priced: every send on this card is refused with destination_not_priced.')}
${table('Dated changes', ['Prefix', 'Credits per segment (— removed)', 'From'], dated, 'No dated changes.')}`,
    );
  });
}
