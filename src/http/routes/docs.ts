/**
 * Public documentation pages. `/docs/errors` renders the error catalogue itself, one anchor per
 * code, so every `docs_url` in an error body points at a real explanation. The guides are
 * Markdown files in docs/guides/, rendered once at start-up.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { AppError, catalogue } from '../../errors/catalogue.ts';
import { escapeHtml } from '../html.ts';
import { renderMarkdown } from '../markdown.ts';

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

/** The guides, in reading order; each is docs/guides/<slug>.md. */
export const GUIDES = [
  'quick-start',
  'authentication',
  'sending',
  'scheduling',
  'sender-ids',
  'delivery-reports',
  'webhooks',
  'receiving-and-opt-outs',
  'marketing',
  'moving-from-twilio',
  'errors',
  'limits',
  'versioning',
] as const;

const GUIDES_DIR = fileURLToPath(new URL('../../../docs/guides/', import.meta.url));

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)} · Pigeon API</title><style>${STYLE}
pre{background:#f3f4f6;padding:.75rem;border-radius:6px;overflow-x:auto}pre code{padding:0}blockquote{border-left:4px solid #d0d7de;margin:0;padding-left:1rem;color:#57606a}
nav{font-size:.9rem;margin-bottom:1.5rem}nav a{margin-right:.75rem}</style></head><body>
<nav><a href="/docs">API reference</a>${GUIDES.map((g) => `<a href="/docs/guides/${g}">${escapeHtml(guideTitle(g))}</a>`).join('')}<a href="/docs/errors">Error catalogue</a></nav>
${body}
</body></html>`;
}

const titles = new Map<string, string>();
/** A guide's title is its first heading. */
function guideTitle(name: string): string {
  let title = titles.get(name);
  if (title === undefined) {
    const first = /^# (.*)$/m.exec(readFileSync(`${GUIDES_DIR}${name}.md`, 'utf8'));
    title = first?.[1] ?? name;
    titles.set(name, title);
  }
  return title;
}

/** Every guide rendered to a full HTML page, by name. */
export function guidePages(): Map<string, string> {
  const pages = new Map<string, string>();
  for (const name of GUIDES) pages.set(name, page(guideTitle(name), renderMarkdown(readFileSync(`${GUIDES_DIR}${name}.md`, 'utf8'))));
  pages.set(
    '',
    page('Guides', `<h1>Guides</h1><ul>${GUIDES.map((g) => `<li><a href="/docs/guides/${g}">${escapeHtml(guideTitle(g))}</a></li>`).join('')}</ul>`),
  );
  return pages;
}

/**
 * `/docs`: the interactive reference (Swagger UI, its assets served from node_modules, no CDN)
 * over the generated OpenAPI document; `/docs/errors`: the catalogue; `/docs/guides/...`: guides.
 */
export async function docsRoutes(app: FastifyInstance): Promise<void> {
  const errors = errorsPage();
  const guides = guidePages();
  await app.register(fastifySwaggerUi, {
    routePrefix: '/docs',
    // BaseLayout: no top bar (its "Explore" box and Fastify logo are of no use to API readers).
    uiConfig: { deepLinking: true, docExpansion: 'list', defaultModelsExpandDepth: 0, layout: 'BaseLayout' },
    // The online validator badge would call validator.swagger.io from the reader's browser.
    validatorUrl: null,
    theme: { title: 'Pigeon API reference' },
  } as never);
  app.get('/docs/errors', async (_request, reply) => reply.type('text/html; charset=utf-8').send(errors));
  app.get('/docs/guides', async (_request, reply) => reply.type('text/html; charset=utf-8').send(guides.get('')));
  app.get<{ Params: { name: string } }>('/docs/guides/:name', async (request, reply) => {
    const html = guides.get(request.params.name.replace(/\.md$/, ''));
    if (html === undefined || request.params.name === '') throw new AppError('not_found', `No guide ${request.params.name}; see /docs/guides.`);
    return reply.type('text/html; charset=utf-8').send(html);
  });
}
