/**
 * Verification documents attached to a Sender ID registration (a trade-register extract, a
 * trademark certificate). The bytes live in the database so that every process serves them.
 * The type is read from the file's first bytes: a name or a browser's Content-Type proves nothing.
 */
import { AppError } from '../../errors/catalogue.ts';
import type { Executor } from '../../store/connect.ts';
import {
  documentById,
  documentsOfSenderIds,
  insertDocuments,
  senderIdById,
  type SenderIdDocumentInfo,
  type SenderIdDocumentRow,
} from '../../store/repositories/sender-ids.repository.ts';
import { lockAccountLimits, storedDocumentBytes, type AccountLimitsRow } from '../../store/repositories/account-limits.repository.ts';
import { newId } from '../../util/ids.ts';
import { documentQuota, documentQuotaExceeded } from '../accounts/account-limits.ts';
import type { Context } from '../context.ts';

export const MAX_DOCUMENT_BYTES = 10 * 1024 * 1024;
export const MAX_DOCUMENTS_PER_UPLOAD = 5;

/** A document without its bytes, as lists show it. */
export type DocumentInfo = SenderIdDocumentInfo;
/** A document with its bytes. */
export type SenderIdDocument = SenderIdDocumentRow;

/** The media type a file's content shows, if it is one we accept. */
export function sniffDocumentType(bytes: Uint8Array): 'application/pdf' | 'image/png' | 'image/jpeg' | null {
  const starts = (sig: number[]) => sig.every((b, i) => bytes[i] === b);
  if (starts([0x25, 0x50, 0x44, 0x46, 0x2d])) return 'application/pdf'; // %PDF-
  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (starts([0xff, 0xd8, 0xff])) return 'image/jpeg';
  return null;
}

const EXTENSIONS: Record<string, string> = { 'application/pdf': '.pdf', 'image/png': '.png', 'image/jpeg': '.jpg' };

/**
 * The name a document is downloaded under: the uploaded name without its extension, plus the
 * extension of the type its content was sniffed as. A file uploaded as `invoice.html` (with PDF
 * bytes) downloads as `invoice.pdf`, so nothing the uploader named decides how it is opened.
 */
export function downloadFilename(doc: { filename: string; content_type: string }): string {
  const ext = EXTENSIONS[doc.content_type] ?? '.bin';
  const dot = doc.filename.lastIndexOf('.');
  const stem = (dot > 0 ? doc.filename.slice(0, dot) : doc.filename).replace(/[.\s]+$/, '') || 'document';
  return `${stem}${ext}`;
}

/** A file name safe to show and to put in a Content-Disposition header. */
function cleanFilename(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? '';
  const cleaned = base.replace(/[^\p{L}\p{N} ._()-]/gu, '_').trim().slice(0, 120);
  return cleaned || 'document';
}

/** Checks an upload without storing it, so that a bad file stops a registration before it is made. */
export function checkDocument(file: { filename: string; bytes: Buffer }): { filename: string; contentType: string } {
  if (file.bytes.length === 0) throw new AppError('invalid_document', `${file.filename || 'The file'} is empty.`);
  if (file.bytes.length > MAX_DOCUMENT_BYTES) throw new AppError('invalid_document', `${file.filename} is larger than 10 MiB.`);
  const contentType = sniffDocumentType(file.bytes);
  if (!contentType) throw new AppError('invalid_document', `${file.filename} is not a PDF, PNG or JPEG file.`);
  return { filename: cleanFilename(file.filename), contentType };
}

/**
 * Inserts documents in the caller's transaction, then refuses with `quota_exceeded` (the caller's
 * transaction rolls back) if the account's documents now exceed its storage quota. `limits` must
 * come from lockAccountLimits at the start of that transaction: parallel uploads then count each
 * other and cannot pass the quota together.
 */
export async function insertDocumentsWithinQuota(
  ctx: Context,
  trx: Executor,
  accountId: string,
  senderIdId: string,
  limits: Pick<AccountLimitsRow, 'document_quota_bytes'>,
  files: { filename: string; bytes: Buffer }[],
): Promise<DocumentInfo[]> {
  if (files.length > MAX_DOCUMENTS_PER_UPLOAD) throw new AppError('invalid_document', `At most ${MAX_DOCUMENTS_PER_UPLOAD} documents at a time.`);
  const now = ctx.clock();
  const rows: SenderIdDocument[] = files.map((f) => {
    const { filename, contentType } = checkDocument(f);
    return { id: newId('doc', now), sender_id_id: senderIdId, account_id: accountId, filename, content_type: contentType, size: f.bytes.length, content: f.bytes, created_at: now };
  });
  await insertDocuments(trx, rows);
  const quota = documentQuota(ctx.config, limits);
  const stored = await storedDocumentBytes(trx, accountId);
  const adding = rows.reduce((n, r) => n + r.size, 0);
  if (stored > quota) throw documentQuotaExceeded(stored - adding, adding, quota);
  return rows.map(({ content: _c, ...info }) => info);
}

export async function addSenderIdDocuments(
  ctx: Context,
  accountId: string,
  senderIdId: string,
  files: { filename: string; bytes: Buffer }[],
): Promise<DocumentInfo[]> {
  if (files.length > MAX_DOCUMENTS_PER_UPLOAD) throw new AppError('invalid_document', `At most ${MAX_DOCUMENTS_PER_UPLOAD} documents at a time.`);
  for (const f of files) checkDocument(f);
  if (!(await senderIdById(ctx.store.db, senderIdId, accountId))) throw new AppError('not_found', `No Sender ID ${senderIdId}.`);
  return ctx.store.db.transaction().execute(async (trx) => {
    const limits = await lockAccountLimits(trx, accountId);
    if (!limits) throw new AppError('not_found', `No account ${accountId}.`);
    return insertDocumentsWithinQuota(ctx, trx, accountId, senderIdId, limits, files);
  });
}

/** Documents of some Sender IDs (without their bytes), grouped by Sender ID. */
export async function listSenderIdDocuments(ctx: Context, senderIdIds: string[]): Promise<Map<string, DocumentInfo[]>> {
  const out = new Map<string, DocumentInfo[]>();
  if (senderIdIds.length === 0) return out;
  for (const row of await documentsOfSenderIds(ctx.store.db, senderIdIds)) {
    const list = out.get(row.sender_id_id) ?? [];
    list.push(row);
    out.set(row.sender_id_id, list);
  }
  return out;
}

/** One document with its bytes; `accountId` restricts it to that account (owners). */
export async function getSenderIdDocument(ctx: Context, id: string, accountId?: string): Promise<SenderIdDocument> {
  const row = await documentById(ctx.store.db, id, accountId);
  if (!row) throw new AppError('not_found', `No document ${id}.`);
  return row;
}
