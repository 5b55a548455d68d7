/**
 * How many values a JSON body may hold and how deep it may nest, checked on its bytes as they arrive, before anything
 * parses it (docs/limits.md, "Request bodies"). Its own file because the scanner is a small state machine of its own,
 * tested alone; `readBody` (read_body.ts) feeds it.
 */

/**
 * Values a JSON body may hold: the body itself, every member of an object and every element of an array. The largest
 * body the API accepts, a person with 20 documents of 20 labels, holds about 600; an endpoint with every setting, its
 * 20 headers and a rename for every event type, about 150.
 */
export const MAX_JSON_VALUES = 10_000;

/** Levels of objects and arrays a JSON body may nest; the deepest the API accepts (a person's document labels) is 4. */
export const MAX_JSON_DEPTH = 32;

/** Which bound a body passed: the detail of its 413 names it. */
export type JsonExcess = "values" | "depth";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/**
 * Counts a JSON text's values and depth as its bytes are fed, chunk by chunk, and says at the first byte past either
 * bound: nothing is built, so a body of a million keys costs a pass over its first bytes, not a million objects. It
 * only counts: it does not validate (JSON.parse still does, once the body passed), so a text that is not JSON cannot
 * make it fail, only count what looks like values. Outside strings every structural character is ASCII, and no byte of
 * a multi-byte UTF-8 character is, so bytes can be scanned as they come, a character split between two chunks
 * included; strings are skipped with `indexOf`, so a document's Base64 costs a memchr, not a loop in JavaScript.
 */
export class JsonBounds {
  #values = 0;
  #depth = 0;
  #inString = false;
  /** Inside a string, the last byte fed was a backslash that escapes the next one. */
  #escaped = false;
  /** The next token starts a value (after `[`, `:`, an array's `,`, and at the start), not an object's key. */
  #valueNext = true;
  /** Per open container, whether it is an array; never longer than `maxDepth`, which stops the scan first. */
  readonly #arrays: boolean[] = [];
  #excess: JsonExcess | null = null;

  constructor(readonly maxValues = MAX_JSON_VALUES, readonly maxDepth = MAX_JSON_DEPTH) {}

  /** The values seen so far. */
  get values(): number {
    return this.#values;
  }

  /** The bound the text passed, once it has; every later call says the same. */
  feed(bytes: Uint8Array): JsonExcess | null {
    if (this.#excess) return this.#excess;
    const end = bytes.length;
    let i = 0;
    while (i < end) {
      if (this.#inString) {
        i = this.#skipString(bytes, i);
        continue;
      }
      const b = bytes[i++];
      if (b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) continue;
      if (b === COMMA) {
        this.#valueNext = this.#arrays[this.#arrays.length - 1] === true;
        continue;
      }
      if (b === COLON) {
        this.#valueNext = true;
        continue;
      }
      if (b === CLOSE_ARRAY || b === CLOSE_OBJECT) {
        if (this.#depth > 0) this.#depth--;
        this.#arrays.pop();
        this.#valueNext = false;
        continue;
      }
      // a key is a string where no value is due: it opens a string and counts nothing
      if (this.#valueNext && ++this.#values > this.maxValues) return this.#excess = "values";
      if (b === QUOTE) this.#inString = true;
      else if (b === OPEN_ARRAY || b === OPEN_OBJECT) {
        if (++this.#depth > this.maxDepth) return this.#excess = "depth";
        this.#arrays.push(b === OPEN_ARRAY);
        this.#valueNext = b === OPEN_ARRAY;
        continue;
      }
      // a number, true, false or null goes on until the next structural byte, which none of its bytes is
      this.#valueNext = false;
    }
    return null;
  }

  /**
   * From `i` inside a string, the index after its closing quote, or `bytes.length` when the string goes on. The first
   * quote is found with `indexOf`; when an odd run of backslashes escapes it, the rest of the string is read byte by
   * byte, so a string of escaped quotes costs one pass, not one search per quote.
   */
  #skipString(bytes: Uint8Array, i: number): number {
    const end = bytes.length;
    if (this.#escaped) {
      this.#escaped = false;
      i++; // the escaped byte (of `\uXXXX`, the `u`: the hex digits are plain bytes)
    }
    const quote = i < end ? bytes.indexOf(QUOTE, i) : -1;
    const stop = quote < 0 ? end : quote;
    // the backslashes just before the quote (or the chunk's end): an odd run escapes it; none before `i` belongs to
    // the run, since `i` follows the opening quote, an escaped byte, or a chunk whose backslashes all came in pairs
    let run = 0;
    while (stop - run - 1 >= i && bytes[stop - run - 1] === BACKSLASH) run++;
    if (quote < 0) {
      this.#escaped = run % 2 === 1;
      return end;
    }
    if (run % 2 === 0) {
      this.#inString = false;
      return quote + 1;
    }
    for (i = quote + 1; i < end; i++) {
      const b = bytes[i];
      if (b === QUOTE) {
        this.#inString = false;
        return i + 1;
      }
      if (b === BACKSLASH && ++i === end) this.#escaped = true;
    }
    return end;
  }
}
