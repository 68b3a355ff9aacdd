/**
 * Public documentation pages. `/docs/errors` renders the error catalogue itself, one anchor per
 * code, so every `docs_url` in an error body points at a real explanation.
 */
import type { FastifyInstance } from 'fastify';
import { catalogue } from '../../errors/catalogue.ts';

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

/** Inline `code` spans in catalogue prose. */
function prose(text: string): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1b1f24}
table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:top;padding:.5rem;border-bottom:1px solid #d0d7de}
code{background:#f3f4f6;padding:.1rem .3rem;border-radius:4px}tr:target{background:#fff8c5}a{color:#0550ae}`;

export function errorsPage(): string {
  const rows = Object.entries(catalogue)
    .map(
      ([code, spec]) =>
        `<tr id="${code}"><td><a href="#${code}"><code>${code}</code></a></td><td>${spec.status}</td><td>${prose(spec.message)}<br>${prose(spec.description)}</td><td>${spec.retryable ? 'yes' : 'no'}</td></tr>`,
    )
    .join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Pigeon API errors</title><style>${STYLE}</style></head><body>
<h1>Errors</h1>
<p>Every error response is JSON: <code>{"status":"error","code":"…","message":"…","docs_url":"…"}</code>, with an optional
<code>details</code> array naming each offending field. Test for <code>code</code>, never for <code>message</code>.</p>
<table><thead><tr><th>Code</th><th>HTTP</th><th>Meaning</th><th>Retry</th></tr></thead><tbody>
${rows}
</tbody></table></body></html>`;
}

export function docsIndexPage(): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Pigeon API</title><style>${STYLE}</style></head><body>
<h1>Pigeon SMS API</h1>
<p>Base URL: <code>/v1</code>. Every request carries <code>Authorization: Bearer &lt;API_KEY&gt;</code>.</p>
<ul>
<li><code>POST /v1/sms/send</code>: send one SMS</li>
<li><code>POST /v1/sms/bulk</code>: send a campaign</li>
<li><code>GET /v1/sms/sender-ids</code>, <code>POST /v1/sms/sender-ids</code>: Sender IDs</li>
<li><code>GET /v1/sms/delivery-reports</code>: delivery reports</li>
<li><code>GET /v1/account</code>: balance</li>
</ul>
<p><a href="/docs/errors">Error codes</a></p>
</body></html>`;
}

export async function docsRoutes(app: FastifyInstance): Promise<void> {
  const errors = errorsPage();
  const index = docsIndexPage();
  app.get('/docs', async (_request, reply) => reply.type('text/html; charset=utf-8').send(index));
  app.get('/docs/errors', async (_request, reply) => reply.type('text/html; charset=utf-8').send(errors));
}
