/**
 * Tracked links (DECISIONS.md §16): finding the `http://` and `https://` URLs of a text, the codes
 * that replace them, and the user agents whose fetches are not counted as clicks. Pure: the caller
 * brings the randomness.
 */

/** A URL found in a text: where it starts and ends (UTF-16 offsets, `end` exclusive) and itself. */
export interface FoundUrl {
  start: number;
  end: number;
  url: string;
}

/** Characters that end a URL in running text whatever comes before them. */
const URL_CANDIDATE = /https?:\/\/[^\s<>"`{}|\\^]+/giy;

/** Characters a sentence puts after a URL, not part of it, when they end it. */
const TRAILING_PUNCTUATION = new Set(['.', ',', ';', ':', '!', '?', "'", '*', '…']);

const CLOSERS: Record<string, string> = { ')': '(', ']': '[', '}': '{' };

function count(text: string, ch: string): number {
  let n = 0;
  for (const c of text) if (c === ch) n++;
  return n;
}

/**
 * Drops what a sentence adds after a URL: end punctuation (`see https://a.example/x.` ends at `x`)
 * and a closing bracket that the URL does not open (`(https://a.example/x)` ends at `x`, while
 * `https://a.example/wiki/Foo_(bar)` keeps its own).
 */
function trimEnd(candidate: string): string {
  let url = candidate;
  for (;;) {
    const last = url.at(-1)!;
    if (TRAILING_PUNCTUATION.has(last)) {
      url = url.slice(0, -1);
      continue;
    }
    const opener = CLOSERS[last];
    if (opener !== undefined && count(url, last) > count(url, opener)) {
      url = url.slice(0, -1);
      continue;
    }
    return url;
  }
}

/** A URL with a host that `URL` accepts; `http://` alone or `http://.` is not one. */
function hasHost(url: string): boolean {
  try {
    return new URL(url).hostname.replace(/\./g, '') !== '';
  } catch {
    return false;
  }
}

/**
 * Every `http://` and `https://` URL of `text`, in order. A URL starts at its scheme (not inside a
 * word: `xhttp://` is not one), runs to the next space or character never written bare in a URL
 * (`<>"` and the like), and loses the sentence punctuation and unbalanced closing brackets at its
 * end. Candidates without a host are skipped.
 */
export function findUrls(text: string): FoundUrl[] {
  const found: FoundUrl[] = [];
  const lower = text.toLowerCase();
  let from = 0;
  for (;;) {
    const at = lower.indexOf('http', from);
    if (at < 0) return found;
    from = at + 4;
    if (at > 0 && /[\p{L}\p{N}_]/u.test(text[at - 1]!)) continue;
    URL_CANDIDATE.lastIndex = at;
    const match = URL_CANDIDATE.exec(text);
    if (!match) continue;
    const url = trimEnd(match[0]);
    const scheme = url.indexOf('://') + 3;
    if (url.length <= scheme || !hasHost(url)) continue;
    found.push({ start: at, end: at + url.length, url });
    from = at + url.length;
  }
}

/** The most links one message may have tracked; a text with more is refused. */
export const MAX_TRACKED_LINKS = 10;

/** Length of a link's code: 62^8 ≈ 2.2 × 10^14 codes. */
export const LINK_CODE_LENGTH = 8;

export const LINK_CODE_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** What `GET /l/<code>` accepts as a code (8 to 10 characters of the alphabet). */
export const LINK_CODE_PATTERN = /^[0-9A-Za-z]{8,10}$/;

/**
 * A code of `LINK_CODE_LENGTH` characters from `randomBytes` (a CSPRNG's), unbiased: bytes of
 * 248 and above are rejected, since 248 is the largest multiple of 62 under 256.
 */
export function linkCode(randomBytes: (n: number) => Uint8Array): string {
  let code = '';
  while (code.length < LINK_CODE_LENGTH) {
    for (const b of randomBytes(LINK_CODE_LENGTH * 2)) {
      if (b >= 248) continue;
      code += LINK_CODE_ALPHABET[b % 62];
      if (code.length === LINK_CODE_LENGTH) break;
    }
  }
  return code;
}

export interface RewrittenText {
  text: string;
  links: { code: string; url: string }[];
}

/**
 * `text` with every URL replaced by `<baseUrl>/<code>`, each with a new code from `newCode`
 * (distinct within the text), and the links made. Null when the text has more than `max` URLs.
 */
export function rewriteLinks(text: string, baseUrl: string, newCode: () => string, max = MAX_TRACKED_LINKS): RewrittenText | null {
  const urls = findUrls(text);
  if (urls.length > max) return null;
  const links: RewrittenText['links'] = [];
  const codes = new Set<string>();
  let out = '';
  let from = 0;
  for (const u of urls) {
    let code = newCode();
    while (codes.has(code)) code = newCode();
    codes.add(code);
    links.push({ code, url: u.url });
    out += `${text.slice(from, u.start)}${baseUrl}/${code}`;
    from = u.end;
  }
  return { text: out + text.slice(from), links };
}

/**
 * User agents of link previews (phones, chat and social apps), crawlers and security scanners:
 * their fetches are redirected but flagged as bots and not counted as clicks. Matched as
 * case-insensitive substrings; docs/guides/marketing.md lists them.
 */
export const BOT_USER_AGENTS: readonly string[] = [
  'bot',
  'crawler',
  'spider',
  'preview',
  'facebookexternalhit',
  'facebookcatalog',
  'whatsapp',
  'telegrambot',
  'slackbot',
  'slack-imgproxy',
  'discordbot',
  'twitterbot',
  'linkedinbot',
  'skypeuripreview',
  'viber',
  'line/',
  'snapchat',
  'pinterest',
  'embedly',
  'iframely',
  'google-safety',
  'googleimageproxy',
  'google-inspectiontool',
  'bingpreview',
  'yahoo! slurp',
  'applebot',
  'microsoft office',
  'outlook',
  'proofpoint',
  'mimecast',
  'barracuda',
  'safelinks',
  'symantec',
  'trendmicro',
  'urlscan',
  'virustotal',
  'curl/',
  'wget/',
  'python-requests',
  'python-urllib',
  'go-http-client',
  'okhttp',
  'java/',
  'axios/',
  'node-fetch',
  'headlesschrome',
];

/** A fetch that is not a person's click: a HEAD request, no user agent, or one of the list. */
export function isBotFetch(method: string, userAgent: string | undefined): boolean {
  if (method === 'HEAD') return true;
  if (!userAgent || userAgent.trim() === '') return true;
  const ua = userAgent.toLowerCase();
  return BOT_USER_AGENTS.some((b) => ua.includes(b));
}
