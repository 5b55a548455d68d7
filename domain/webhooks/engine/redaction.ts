/**
 * What a server's answer is cleared of before anything keeps or shows it (docs/webhooks.md, "Secrets never echoed"):
 * an endpoint's secrets in every form a server may echo them in. A file of its own because both servers' answers
 * pass through it, the token server's (oauth2_tokens.ts) and the receiver's (sender.ts), and it is the one place that
 * knows the encodings.
 *
 * The search runs on a decoded copy of the text, not on a list of encoded copies of each secret: percent-escapes
 * (either case of hex), `+` and JSON's `\"`, `\/`, `\n`, `\u00XX` escapes are decoded to UTF-8 bytes, so a secret
 * echoed raw, form-encoded, percent-encoded, JSON-escaped, or in any mix of them (a JSON string holding a form body)
 * is found by one `indexOf`, in time linear in the answer whatever the secret's length.
 */

/** A secret to clear: its value, the text it is replaced with, and other exact forms it was sent in. */
export type Secret = {
  value: string;
  /** What stands in its place: `[client secret]`, `[secret header X-Api-Key]`. */
  label: string;
  /** Forms that are not an encoding of `value` alone, such as a Basic credential (base64 of `id:secret`). */
  sentAs?: readonly string[];
};

/**
 * A secret's first characters at the very end of a text (an answer cut at its size bound) are cleared from this many
 * on: fewer could be a coincidence, and a secret shorter than this is cleared only whole.
 */
export const MIN_TAIL_CHARS = 8;

const encoder = new TextEncoder();

/** `+` and space read as one: a form body's `+` is a space, a raw one a plus, and the search cannot tell which. */
const PLUS = 0x2b;
const SPACE = 0x20;

/** JSON's one-letter escapes (RFC 8259 §7), by the letter after the backslash. */
const SHORT_ESCAPES = new Map(Object.entries({ '"': 0x22, "\\": 0x5c, "/": 0x2f, b: 8, f: 12, n: 10, r: 13, t: 9 }));

const isHex = (c: number) => (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66);

/**
 * The text decoded to bytes, as a string of one char per byte, and for each byte where its unit of the text starts:
 * a char, a `%XX`, a JSON escape (`unitEnd` finds where it ends).
 */
function decoded(text: string): { bytes: string; from: Int32Array } {
  // a unit of the text never decodes to more than 3 bytes per char of it
  const out = new Uint16Array(text.length * 3);
  const from = new Int32Array(text.length * 3);
  let n = 0;
  for (let i = 0; i < text.length;) {
    const c = text.charCodeAt(i);
    const end = unitEnd(text, i);
    if (c === 0x25 && end === i + 3) out[n] = parseInt(text.slice(i + 1, i + 3), 16);
    else if (c === 0x5c && end === i + 2) out[n] = SHORT_ESCAPES.get(text[i + 1])!;
    else if (c < 0x80 && end === i + 1) out[n] = c;
    else {
      const chars = c === 0x5c
        ? String.fromCharCode(...text.slice(i + 2, end).split("\\u").map((h) => parseInt(h, 16)))
        : text.slice(i, end);
      const encoded = encoder.encode(chars);
      for (let k = 0; k < encoded.length; k++) {
        out[n + k] = encoded[k] === PLUS ? SPACE : encoded[k];
        from[n + k] = i;
      }
      n += encoded.length;
      i = end;
      continue;
    }
    if (out[n] === PLUS) out[n] = SPACE;
    from[n++] = i;
    i = end;
  }
  return { bytes: UTF16.decode(out.subarray(0, n)), from };
}

/** Where the unit of the text starting at `i` ends: a `%XX`, a JSON escape (a surrogate pair's two), or a char. */
function unitEnd(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === 0x25 && isHex(text.charCodeAt(i + 1)) && isHex(text.charCodeAt(i + 2))) return i + 3;
  if (c === 0x5c) {
    const next = text[i + 1];
    if (next === "u" && HEX4.test(text.slice(i + 2, i + 6))) {
      const unit = parseInt(text.slice(i + 2, i + 6), 16);
      const low = text.slice(i + 6, i + 8) === "\\u" && HEX4.test(text.slice(i + 8, i + 12))
        ? parseInt(text.slice(i + 8, i + 12), 16)
        : -1;
      return unit >= 0xd800 && unit <= 0xdbff && low >= 0xdc00 && low <= 0xdfff ? i + 12 : i + 6;
    }
    if (SHORT_ESCAPES.has(next)) return i + 2;
  }
  return c >= 0xd800 && c <= 0xdbff && i + 1 < text.length ? i + 2 : i + 1;
}

const HEX4 = /^[0-9a-fA-F]{4}$/;
/** Char codes under 256 read back as a string of one char each, without spreading them as arguments. */
const UTF16 = new TextDecoder("utf-16le");

/** A form to look for, as the decoded text holds it. */
function asBytes(form: string): string {
  const bytes = encoder.encode(form);
  const units = new Uint16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) units[i] = bytes[i] === PLUS ? SPACE : bytes[i];
  return UTF16.decode(units);
}

/** Where the longest start of `form` (MIN_TAIL_CHARS or more, shorter than all of it) ends `bytes`, or -1. */
function tailStart(bytes: string, form: string): number {
  for (let at = Math.max(0, bytes.length - form.length + 1); at <= bytes.length - MIN_TAIL_CHARS; at++) {
    if (bytes.charCodeAt(at) === form.charCodeAt(0) && form.startsWith(bytes.slice(at))) return at;
  }
  return -1;
}

/**
 * `text` with every echo of `secrets` replaced by its label: raw, form-encoded (`+` for a space), percent-encoded
 * (`encodeURIComponent`, either case of hex), JSON-escaped, any of those inside another (a form body in a JSON
 * string), and each `sentAs` form in the same encodings; also a secret's first MIN_TAIL_CHARS characters or more at
 * the very end, where an answer was cut. Longer secrets are looked for first, so one holding another is cleared whole.
 */
export function redactSecrets(text: string, secrets: readonly Secret[]): string {
  const forms = secrets.flatMap((s) =>
    [s.value, ...s.sentAs ?? []].filter((f) => f !== "").map((f) => ({ bytes: asBytes(f), label: s.label }))
  ).sort((a, b) => b.bytes.length - a.bytes.length);
  if (forms.length === 0 || text === "") return text;
  const { bytes, from } = decoded(text);
  // the spans of the text to replace, by the byte they start at
  const spans: { start: number; end: number; label: string }[] = [];
  const taken = new Uint8Array(bytes.length);
  const take = (at: number, length: number, label: string) => {
    for (let k = at; k < at + length; k++) if (taken[k]) return;
    taken.fill(1, at, at + length);
    spans.push({ start: from[at], end: unitEnd(text, from[at + length - 1]), label });
  };
  for (const { bytes: form, label } of forms) {
    for (let at = bytes.indexOf(form); at >= 0; at = bytes.indexOf(form, at + form.length)) {
      take(at, form.length, label);
    }
    const tail = tailStart(bytes, form);
    if (tail >= 0) take(tail, bytes.length - tail, label);
  }
  if (spans.length === 0) return text;
  spans.sort((a, b) => a.start - b.start);
  let out = "";
  let at = 0;
  for (const span of spans) {
    // a unit of the text decodes to whole characters, so spans of bytes that do not overlap do not share a unit
    if (span.start < at) continue;
    out += text.slice(at, span.start) + span.label;
    at = span.end;
  }
  return out + text.slice(at);
}
