/**
 * The page frame shared by the owner and operator areas, and small view helpers. Pages are plain
 * server-rendered HTML; htmx and two small scripts (assets/app.js) add the few live parts.
 */
import { html, raw, type Html, type HtmlValue } from '../html.ts';

export type Area = 'owner' | 'operator';

export interface PageOptions {
  title: string;
  area: Area;
  /** Present when someone is signed in: shows the navigation and the logout form. */
  session?: { csrf: string; who: string; /** Which navigation entries the person may open (all when absent). */ shows?: (href: string) => boolean } | null;
  /** The current navigation entry. */
  current?: string;
  body: Html;
  /** Extra scripts (asset names). */
  scripts?: string[];
}

const NAV: Record<Area, { href: string; label: string; key: string }[]> = {
  owner: [
    { href: '/dashboard', label: 'Overview', key: 'overview' },
    { href: '/dashboard/messages', label: 'Messages', key: 'messages' },
    { href: '/dashboard/campaigns', label: 'Campaigns', key: 'campaigns' },
    { href: '/dashboard/inbox', label: 'Inbox', key: 'inbox' },
    { href: '/dashboard/opt-outs', label: 'Opt-outs', key: 'opt-outs' },
    { href: '/dashboard/verifications', label: 'Verify', key: 'verify' },
    { href: '/dashboard/sender-ids', label: 'Sender IDs', key: 'sender-ids' },
    { href: '/dashboard/credits', label: 'Credits', key: 'credits' },
    { href: '/dashboard/usage', label: 'Usage', key: 'usage' },
    { href: '/dashboard/settings/api-keys', label: 'Settings', key: 'settings' },
  ],
  operator: [
    { href: '/operator/sender-ids', label: 'Review queue', key: 'review' },
    { href: '/operator/accounts', label: 'Accounts', key: 'accounts' },
    { href: '/operator/backlog', label: 'Dispatch backlog', key: 'backlog' },
    { href: '/operator/numbers', label: 'Numbers', key: 'numbers' },
    { href: '/operator/verify', label: 'Verify', key: 'verify' },
    { href: '/operator/rate-cards', label: 'Rate cards', key: 'rate-cards' },
    { href: '/operator/smpp', label: 'SMPP binds', key: 'smpp' },
    { href: '/operator/routes', label: 'Routes', key: 'routes' },
    { href: '/operator/margin', label: 'Margin', key: 'margin' },
    { href: '/operator/messages', label: 'Messages', key: 'messages' },
    { href: '/operator/outbox', label: 'Mail outbox', key: 'outbox' },
    { href: '/operator/erasures', label: 'Erasures', key: 'erasures' },
    { href: '/operator/audit', label: 'Audit log', key: 'audit' },
  ],
};

export function asset(name: string): string {
  return `/dashboard/assets/${name}`;
}

export function page(opts: PageOptions): string {
  const base = opts.area === 'owner' ? '/dashboard' : '/operator';
  const nav = opts.session
    ? html`<nav aria-label="Main"><ul>${NAV[opts.area].filter((n) => opts.session?.shows?.(n.href) ?? true).map(
        (n) => html`<li><a href="${n.href}"${opts.current === n.key ? raw(' aria-current="page"') : ''}>${n.label}</a></li>`,
      )}</ul>
      <form method="post" action="${base}/logout" class="logout">${csrfField(opts.session.csrf)}<span class="who">${opts.session.who}</span>
      <button type="submit" class="link">Log out</button></form></nav>`
    : '';
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${opts.title} · Pigeon${opts.area === 'operator' ? ' operator' : ''}</title>
<link rel="icon" type="image/svg+xml" href="${asset('favicon.svg')}">
<link rel="stylesheet" href="${asset('app.css')}">
<script src="${asset('htmx.min.js')}" defer></script>
<script src="${asset('app.js')}" defer></script>
${(opts.scripts ?? []).map((s) => (s.endsWith('.css') ? html`<link rel="stylesheet" href="${asset(s)}">` : html`<script src="${asset(s)}" defer></script>`))}
</head><body class="${opts.area}">
<header><a class="brand" href="${base}">Pigeon${opts.area === 'operator' ? ' · operator' : ''}</a>${nav}</header>
<main id="main">
<h1>${opts.title}</h1>
${opts.body}
</main></body></html>`.text;
}

export function csrfField(token: string): Html {
  return html`<input type="hidden" name="_csrf" value="${token}">`;
}

export function alert(message: string | null | undefined, kind: 'error' | 'ok' = 'error'): Html {
  if (!message) return html``;
  return html`<p class="alert ${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${message}</p>`;
}

/** Pending / Approved / Rejected, as the spec capitalises them. */
export function statusBadge(status: string): Html {
  const label = status.charAt(0).toUpperCase() + status.slice(1);
  return html`<span class="badge badge-${status}">${label}</span>`;
}

export function when(ms: number | null | undefined): Html {
  if (ms === null || ms === undefined) return html`<span class="muted">never</span>`;
  const iso = new Date(Number(ms)).toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}

export function table(caption: string, headers: string[], rows: HtmlValue[][], empty: string): Html {
  if (rows.length === 0) return html`<p class="muted">${empty}</p>`;
  return html`<div class="table-wrap"><table><caption>${caption}</caption><thead><tr>${headers.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody>${rows.map((r) => html`<tr>${r.map((c, i) => html`<td data-label="${headers[i] ?? ''}">${c}</td>`)}</tr>`)}</tbody></table></div>`;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(0)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
