/**
 * The TwiML a `sms_url` answers with (DECISIONS.md §12): `<Response>` holding `<Message>`
 * elements, each a reply to send; `<Response/>` or an empty body sends nothing. Only this subset
 * is read; anything else (another verb, attributes naming another recipient, media) is refused
 * whole, so that a misunderstood answer never sends a wrong message.
 */

/** Larger answers are not TwiML a reply needs: they are refused unread. */
export const MAX_TWIML_BYTES = 16 * 1024;
/** Replies per inbound message at most. */
export const MAX_TWIML_MESSAGES = 5;

export type TwimlReading = { ok: true; messages: string[] } | { ok: false; reason: string };

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decodeText(raw: string): string | null {
  let bad = false;
  const text = raw.replace(/<!\[CDATA\[([\s\S]*?)\]\]>|&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-z]+);|[<&]/g, (match, cdata: string | undefined, entity: string | undefined) => {
    if (cdata !== undefined) return cdata;
    if (entity === undefined) {
      bad = true;
      return match;
    }
    if (entity.startsWith('#')) {
      const code = entity[1] === 'x' ? parseInt(entity.slice(2), 16) : parseInt(entity.slice(1), 10);
      if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff) || code === 0) {
        bad = true;
        return match;
      }
      return String.fromCodePoint(code);
    }
    const named = ENTITIES[entity];
    if (named === undefined) bad = true;
    return named ?? match;
  });
  return bad ? null : text;
}

/** Reads a TwiML answer; `body` is the whole answer as text. */
export function readTwiml(body: string): TwimlReading {
  if (Buffer.byteLength(body, 'utf8') > MAX_TWIML_BYTES) return { ok: false, reason: `the answer is larger than ${MAX_TWIML_BYTES} bytes` };
  let rest = body.replace(/^\uFEFF/, '').trim();
  if (rest === '') return { ok: true, messages: [] };
  rest = rest.replace(/^<\?xml[^?]*\?>/, '').trim();
  if (/^<Response\s*\/>$/.test(rest)) return { ok: true, messages: [] };
  const whole = /^<Response\s*>([\s\S]*)<\/Response\s*>$/.exec(rest);
  if (!whole) return { ok: false, reason: 'the answer is not a <Response> element' };
  let inner = whole[1]!.replace(/<!--[\s\S]*?-->/g, '');
  const messages: string[] = [];
  for (;;) {
    inner = inner.trim();
    if (inner === '') break;
    if (/^<Message\s*\/>/.test(inner)) {
      inner = inner.replace(/^<Message\s*\/>/, '');
      continue;
    }
    const m = /^<Message\s*>([\s\S]*?)<\/Message\s*>/.exec(inner);
    if (!m) return { ok: false, reason: 'only <Message> elements without attributes are supported in a <Response>' };
    inner = inner.slice(m[0].length);
    let content = m[1]!;
    const body = /^\s*<Body\s*>([\s\S]*?)<\/Body\s*>\s*$/.exec(content);
    if (body) content = body[1]!;
    const text = decodeText(content);
    if (text === null) return { ok: false, reason: 'a <Message> holds markup or an unknown entity' };
    if (text.trim() !== '') messages.push(text);
    if (messages.length > MAX_TWIML_MESSAGES) return { ok: false, reason: `more than ${MAX_TWIML_MESSAGES} <Message> elements` };
  }
  return { ok: true, messages };
}
