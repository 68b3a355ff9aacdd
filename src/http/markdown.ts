/**
 * A small Markdown-to-HTML renderer for the guides in docs/guides/. It covers what those guides
 * use (headings, paragraphs, fenced code, lists, tables, block quotes, inline code, emphasis and
 * links) and escapes everything else, so the guides need no dependency and no build step.
 */

import { escapeHtml } from './html.ts';

/** Heading text as an anchor id: `Verifying the signature` → `verifying-the-signature`. */
export function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/<[^>]+>|`/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

/** Inline spans of one line of text: code first (its content is literal), then links and emphasis. */
export function inline(text: string): string {
  const parts = text.split(/(`[^`]+`)/g);
  return parts
    .map((part, i) => {
      if (i % 2 === 1) return `<code>${escapeHtml(part.slice(1, -1))}</code>`;
      return escapeHtml(part)
        .replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (_m, label: string, href: string) => {
          // Only web and relative links: a guide must not be able to carry a javascript: URL.
          const safe = /^(https?:\/\/|\/|#|\.)/.test(href) ? href : '#';
          return `<a href="${safe}">${label}</a>`;
        })
        .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
        .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, '$1<em>$2</em>');
    })
    .join('');
}

function tableRow(line: string): string[] {
  return line
    .trim()
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((cell) => cell.trim());
}

/** Renders a Markdown document to an HTML fragment. */
export function renderMarkdown(source: string): string {
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let i = 0;
  const isBlockStart = (line: string) => /^(#{1,6} |```|> |\s*[-*] |\s*\d+\. |\|)/.test(line);
  while (i < lines.length) {
    const line = lines[i] as string;
    if (line.trim() === '') {
      i++;
      continue;
    }
    const fence = /^```(\w*)/.exec(line);
    if (fence) {
      const code: string[] = [];
      i++;
      while (i < lines.length && !(lines[i] as string).startsWith('```')) code.push(lines[i++] as string);
      i++;
      const lang = fence[1] ? ` class="language-${fence[1]}"` : '';
      out.push(`<pre><code${lang}>${escapeHtml(code.join('\n'))}</code></pre>`);
      continue;
    }
    const heading = /^(#{1,6}) (.*)$/.exec(line);
    if (heading) {
      const level = (heading[1] as string).length;
      const text = heading[2] as string;
      out.push(`<h${level} id="${slug(text)}">${inline(text)}</h${level}>`);
      i++;
      continue;
    }
    if (line.startsWith('|')) {
      const rows: string[][] = [];
      while (i < lines.length && (lines[i] as string).startsWith('|')) rows.push(tableRow(lines[i++] as string));
      const [head, , ...body] = rows;
      out.push(
        `<table><thead><tr>${(head ?? []).map((c) => `<th>${inline(c)}</th>`).join('')}</tr></thead><tbody>` +
          body.map((r) => `<tr>${r.map((c) => `<td>${inline(c)}</td>`).join('')}</tr>`).join('') +
          '</tbody></table>',
      );
      continue;
    }
    if (line.startsWith('> ')) {
      const quote: string[] = [];
      while (i < lines.length && (lines[i] as string).startsWith('> ')) quote.push((lines[i++] as string).slice(2));
      out.push(`<blockquote>${renderMarkdown(quote.join('\n'))}</blockquote>`);
      continue;
    }
    const list = /^\s*([-*]|\d+\.) /.exec(line);
    if (list) {
      const ordered = /\d/.test(list[1] as string);
      const items: string[] = [];
      while (i < lines.length) {
        const current = lines[i] as string;
        const item = /^\s*(?:[-*]|\d+\.) (.*)$/.exec(current);
        if (item) items.push(item[1] as string);
        // A wrapped line continues the item above it.
        else if (/^\s+\S/.test(current) && items.length > 0) items[items.length - 1] += ` ${current.trim()}`;
        else break;
        i++;
      }
      const tag = ordered ? 'ol' : 'ul';
      out.push(`<${tag}>${items.map((t) => `<li>${inline(t)}</li>`).join('')}</${tag}>`);
      continue;
    }
    const paragraph: string[] = [];
    while (i < lines.length && (lines[i] as string).trim() !== '' && !isBlockStart(lines[i] as string)) paragraph.push((lines[i++] as string).trim());
    out.push(`<p>${inline(paragraph.join(' '))}</p>`);
  }
  return out.join('\n');
}
