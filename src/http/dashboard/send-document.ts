/** A stored document sent as a download, for the owner's and the operator's pages. */
import type { FastifyReply } from 'fastify';
import { downloadFilename } from '../../services/sender-ids/documents.ts';

/**
 * Sends a stored document as a download, never rendered inline by the browser: an attachment named
 * with the extension of its sniffed type (never the uploader's `.html`), no type sniffing, and a
 * sandbox in case a browser opens it anyway.
 */
export function sendDocument(reply: FastifyReply, doc: { filename: string; content_type: string; content: Buffer }) {
  const filename = downloadFilename(doc);
  return reply
    .type(doc.content_type)
    .header('content-disposition', `attachment; filename="${filename.replace(/[^\x20-\x7e]|"/g, '_')}"; filename*=UTF-8''${encodeURIComponent(filename)}`)
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', "sandbox; default-src 'none'")
    .send(doc.content);
}
