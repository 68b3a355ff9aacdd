/**
 * GSM 03.38 text as SMPP carries it with `data_coding` 0: one octet per septet, unpacked (the
 * SMSC packs it for the air interface). Extension characters become ESC + code, which is why the
 * segmentation counts them as two units.
 */
const BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\x1bÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
const EXTENSION: Record<string, number> = { '\f': 0x0a, '^': 0x14, '{': 0x28, '}': 0x29, '\\': 0x2f, '[': 0x3c, '~': 0x3d, ']': 0x3e, '|': 0x40, '€': 0x65 };

const BASIC_CODES = new Map<string, number>(Array.from(BASIC, (c, i) => [c, i]));
const BASIC_CHARS = Array.from(BASIC);
const EXTENSION_CHARS = new Map<number, string>(Object.entries(EXTENSION).map(([c, code]) => [code, c]));

/** Encodes GSM-7 text; throws on a character outside the alphabet (segmentation chose UCS-2 for those). */
export function encodeGsm7(text: string): Buffer {
  return encode(text, null);
}

/** Encodes GSM-7 text, writing `replacement` (a GSM character) for each character outside the alphabet. */
export function encodeGsm7Replacing(text: string, replacement = '?'): Buffer {
  return encode(text, replacement);
}

function encode(text: string, replacement: string | null): Buffer {
  // At most two octets per UTF-16 unit (an extension character is ESC + code).
  const out = Buffer.allocUnsafe(text.length * 2);
  let at = 0;
  for (let char of text) {
    let code = BASIC_CODES.get(char);
    if (code !== undefined && code !== 0x1b) {
      out[at++] = code;
      continue;
    }
    let ext = EXTENSION[char];
    if (ext === undefined) {
      if (replacement === null) throw new Error(`not a GSM 03.38 character: U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`);
      char = replacement;
      code = BASIC_CODES.get(char);
      if (code !== undefined && code !== 0x1b) {
        out[at++] = code;
        continue;
      }
      ext = EXTENSION[char]!;
    }
    out[at++] = 0x1b;
    out[at++] = ext;
  }
  return out.subarray(0, at);
}

/** Decodes unpacked GSM-7 octets (the test SMSC and receipts use it). */
export function decodeGsm7(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b === 0x1b && i + 1 < bytes.length) {
      out += EXTENSION_CHARS.get(bytes[++i]!) ?? ' ';
      continue;
    }
    out += BASIC_CHARS[b] ?? ' ';
  }
  return out;
}

/** UCS-2 as SMPP carries it with `data_coding` 8: UTF-16 big-endian (surrogate pairs kept whole by the split). */
export function encodeUcs2(text: string): Buffer {
  const le = Buffer.from(text, 'utf16le');
  return le.swap16();
}

export function decodeUcs2(bytes: Uint8Array): string {
  return Buffer.from(bytes).swap16().toString('utf16le');
}
