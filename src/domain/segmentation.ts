/**
 * SMS segmentation per GSM 03.38 / 3GPP TS 23.038.
 *
 * Customers are billed per segment, and carrier connectors submit one part per
 * segment, so the count and the split are computed by the same packing routine
 * and can never disagree.
 */

/** The two SMS alphabets a message can travel in; it decides how many characters fit in a segment. */
export type Encoding = 'GSM-7' | 'UCS-2';

/** GSM 03.38 basic table (position 0x1B, ESC, is not a character); each costs one septet. */
const GSM7_BASIC = new Set<string>([
  '@', '£', '$', '¥', 'è', 'é', 'ù', 'ì', 'ò', 'Ç', '\n', 'Ø', 'ø', '\r', 'Å', 'å',
  'Δ', '_', 'Φ', 'Γ', 'Λ', 'Ω', 'Π', 'Ψ', 'Σ', 'Θ', 'Ξ', 'Æ', 'æ', 'ß', 'É',
  ' ', '!', '"', '#', '¤', '%', '&', "'", '(', ')', '*', '+', ',', '-', '.', '/',
  ...'0123456789:;<=>?',
  '¡', ...'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'Ä', 'Ö', 'Ñ', 'Ü', '§',
  '¿', ...'abcdefghijklmnopqrstuvwxyz', 'ä', 'ö', 'ñ', 'ü', 'à',
]);

/** GSM 03.38 extension table; each is sent as ESC + code, i.e. two septets that must stay together. */
const GSM7_EXTENSION = new Set<string>(['\f', '^', '{', '}', '\\', '[', ']', '~', '|', '€']);

const LIMITS: Record<Encoding, { single: number; multi: number }> = {
  'GSM-7': { single: 160, multi: 153 },
  'UCS-2': { single: 70, multi: 67 },
};

/** One indivisible piece of text (a character, an escape pair or a surrogate pair) and its cost in units. */
interface Token {
  text: string;
  cost: number;
}

function gsm7Cost(char: string): number | undefined {
  if (GSM7_BASIC.has(char)) return 1;
  if (GSM7_EXTENSION.has(char)) return 2;
  return undefined;
}

/** Picks the encoding and cuts the text into pieces that a part boundary may not split. */
function tokenize(text: string): { encoding: Encoding; tokens: Token[] } {
  const gsm: Token[] = [];
  // Iterating a string yields code points, so a surrogate pair arrives as one piece.
  for (const char of text) {
    const cost = gsm7Cost(char);
    if (cost === undefined) {
      const tokens = Array.from(text, (c) => ({ text: c, cost: c.length }));
      return { encoding: 'UCS-2', tokens };
    }
    gsm.push({ text: char, cost });
  }
  return { encoding: 'GSM-7', tokens: gsm };
}

/** Greedy packing, which is optimal when order is kept and tokens are indivisible. */
function pack(tokens: readonly Token[], limit: number): string[] {
  const parts: string[] = [];
  let current = '';
  let used = 0;
  for (const token of tokens) {
    if (used + token.cost > limit) {
      parts.push(current);
      current = '';
      used = 0;
    }
    current += token.text;
    used += token.cost;
  }
  parts.push(current);
  return parts;
}

function layout(text: string): { encoding: Encoding; units: number; parts: string[] } {
  const { encoding, tokens } = tokenize(text);
  const units = tokens.reduce((sum, t) => sum + t.cost, 0);
  const { single, multi } = LIMITS[encoding];
  const parts = units <= single ? [text] : pack(tokens, multi);
  return { encoding, units, parts };
}

/**
 * Tells how a message will be billed: its encoding, its size in units (septets
 * for GSM-7, UTF-16 code units for UCS-2) and the number of segments. The count
 * comes from simulating the real split, so it always equals the number of parts
 * a connector submits. An empty string counts as one segment; callers reject
 * empty messages before this.
 */
export function segmentMessage(text: string): { encoding: Encoding; segments: number; units: number } {
  const { encoding, units, parts } = layout(text);
  return { encoding, segments: parts.length, units };
}

/**
 * Splits a message the way a carrier connector submits it, one string per
 * billed segment, never separating an escape pair or a surrogate pair.
 */
export function splitIntoParts(text: string): { encoding: Encoding; parts: string[] } {
  const { encoding, parts } = layout(text);
  return { encoding, parts };
}
