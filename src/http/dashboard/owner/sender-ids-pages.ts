/**
 * Sender IDs, /dashboard/sender-ids: register one with its verification documents, check a name
 * as it is typed, list them with the reviewer's notes, download a document.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acting } from '../../acting.ts';
import { AppError } from '../../../errors/catalogue.ts';
import { getSenderIdDocument, listSenderIdDocuments, MAX_DOCUMENTS_PER_UPLOAD } from '../../../services/sender-ids/documents.ts';
import { assertOwnerVerified } from '../../../services/auth/owners.ts';
import { checkNewSenderIdName, listSenderIds, registerSenderId } from '../../../services/sender-ids/sender-ids.ts';
import { html } from '../../html.ts';
import { alert, csrfField, formatBytes, statusBadge, table, when } from '../layout.ts';
import { formParts, seeOther } from '../session-guard.ts';
import { state, type OwnerArea } from './owner-area.ts';
import { sendDocument } from '../send-document.ts';

export function senderIdPages(app: FastifyInstance, { ctx, render }: OwnerArea): void {
  const senderIdsPage = async (request: FastifyRequest, reply: FastifyReply, opts: { error?: string; notice?: string; name?: string } = {}) => {
    const { account, session } = state(request);
    const senders = await listSenderIds(ctx, { accountId: account.id });
    const docs = await listSenderIdDocuments(ctx, senders.map((s) => s.id));
    const rows = senders.map((s) => [
      html`<strong>${s.name}</strong>`,
      statusBadge(s.status),
      s.review_note ? html`<span class="note">${s.review_note}</span>` : html`<span class="muted">–</span>`,
      (docs.get(s.id) ?? []).map((d) => html`<a href="/dashboard/sender-ids/documents/${d.id}">${d.filename}</a> <span class="muted">(${formatBytes(Number(d.size))})</span><br>`),
      when(s.created_at),
    ]);
    return render(
      request,
      reply,
      'Sender IDs',
      'sender-ids',
      html`${alert(opts.error)}${alert(opts.notice, 'ok')}
<section><h2>Register a Sender ID</h2>
<form method="post" action="/dashboard/sender-ids" enctype="multipart/form-data">${csrfField(session.csrf_token)}
<label for="sender-name">Name</label>
<input id="sender-name" name="name" type="text" required maxlength="11" autocomplete="off" value="${opts.name ?? ''}" aria-describedby="name-check name-rules"
hx-get="/dashboard/sender-ids/check" hx-trigger="input changed delay:200ms" hx-target="#name-check">
<p class="hint" id="name-rules">1 to 11 letters A-Z, a-z and digits 0-9; no spaces or punctuation. Reserved names (banks, government, big brands) are refused.</p>
<p id="name-check" aria-live="polite"></p>
<label for="documents">Verification documents (optional)</label>
<input id="documents" name="documents" type="file" multiple accept=".pdf,.png,.jpg,.jpeg,application/pdf,image/png,image/jpeg" aria-describedby="documents-hint">
<p class="hint" id="documents-hint">PDF, PNG or JPEG, up to 10 MiB each, at most ${MAX_DOCUMENTS_PER_UPLOAD}: for example a trade-register extract or a trademark certificate.</p>
<div class="actions"><button type="submit">Register</button></div></form>
<p class="hint">New Sender IDs are Pending until an operator reviews them; you are told by e-mail.</p></section>
${table('Your Sender IDs', ['Name', 'Status', 'Reviewer’s note', 'Documents', 'Registered'], rows, 'No Sender IDs yet.')}`,
    );
  };

  app.get('/sender-ids', async (request, reply) => senderIdsPage(request, reply));

  app.get<{ Querystring: { name?: string } }>('/sender-ids/check', async (request, reply) => {
    const name = typeof request.query.name === 'string' ? request.query.name : '';
    reply.type('text/html; charset=utf-8');
    if (name === '') return '';
    const check = checkNewSenderIdName(ctx, name);
    return check.ok
      ? html`<span class="check-ok">✓ ${name} can be registered.</span>`.text
      : html`<span class="check-bad">✗ ${check.reason}</span>`.text;
  });

  app.post('/sender-ids', async (request, reply) => {
    const { account } = state(request);
    assertOwnerVerified(state(request).owner);
    const values: Record<string, string> = {};
    const files: { filename: string; bytes: Buffer }[] = [];
    try {
      for await (const part of formParts(request)) {
        if (part.type === 'file') {
          const bytes = await part.toBuffer();
          // An empty file input still sends one part with no name and no bytes.
          if (part.filename || bytes.length > 0) files.push({ filename: part.filename, bytes });
        } else if (typeof part.value === 'string') {
          values[part.fieldname] = part.value;
        }
      }
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'FST_REQ_FILE_TOO_LARGE') throw new AppError('invalid_document', 'A document is larger than 10 MiB.');
      if (code === 'FST_FILES_LIMIT') throw new AppError('invalid_document', `At most ${MAX_DOCUMENTS_PER_UPLOAD} documents at a time.`);
      // Anything else here is a malformed multipart body (cut short, bad part headers).
      throw new AppError('invalid_request', 'The upload could not be read; please try again.');
    }
    const name = (values.name ?? '').trim();
    try {
      // The Sender ID and its documents are stored together or not at all (quotas included).
      await registerSenderId(acting(ctx, request), account.id, name, files);
    } catch (err) {
      if (!(err instanceof AppError) || (err.status !== 400 && err.code !== 'quota_exceeded')) throw err;
      reply.code(err.status);
      return senderIdsPage(request, reply, { error: err.message, name });
    }
    return seeOther(reply, '/dashboard/sender-ids');
  });

  app.get<{ Params: { id: string } }>('/sender-ids/documents/:id', async (request, reply) => {
    const doc = await getSenderIdDocument(ctx, request.params.id, state(request).account.id);
    return sendDocument(reply, doc);
  });
}
