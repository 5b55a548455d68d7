/**
 * The line `deno task receive` prints for one delivery, apart from the command so it can be tested without a terminal.
 * Whoever can reach the receiver's port chooses the body and headers: every control character in them is printed
 * escaped, so a body cannot colour the terminal, move its cursor or write a line of its own such as a forged
 * "verified" (README, "Quickstart").
 */

/**
 * C0 and C1 controls (ESC, CSI, BEL, CR, LF...), DEL, the line and paragraph separators and the bidirectional
 * overrides, which reorder what a terminal shows.
 */
// deno-lint-ignore no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `text` with each control character written as an escape (`\x1b`, `\u202e`): one line, shown as it was sent. */
export function printable(text: string): string {
  return text.replace(CONTROL, (ch) => {
    const code = ch.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/** The event in a body: its type and data, in the format of either body the service sends (or the first 200 bytes). */
function parse(raw: string): { type?: unknown; data?: unknown } {
  try {
    const body = JSON.parse(raw);
    return body?.notification ? { type: body.notification.type, data: body.notification } : body ?? {};
  } catch {
    return { data: raw.slice(0, 200) };
  }
}

/**
 * `verified  <type>  <webhook-id>  <data as JSON>`, or `NOT VERIFIED  ...`, with nothing of the sender unescaped. A
 * verified line ends with `  endpoint <id>` when the endpoint whose secret verified it is known: after the data, so the
 * start that the README's quickstart (and its test) shows stays as it was.
 */
export function deliveryLine(
  verified: boolean,
  raw: string,
  headers: Record<string, string>,
  endpointId?: string,
): string {
  const event = parse(raw);
  const type = typeof event.type === "string"
    ? event.type
    : event.type === undefined
    ? "?"
    : JSON.stringify(event.type);
  const what = `${type}  ${headers["webhook-id"] ?? "?"}  ${JSON.stringify(event.data ?? event)}`;
  const from = verified && endpointId ? `  endpoint ${printable(endpointId)}` : "";
  return `${verified ? "verified" : "NOT VERIFIED"}  ${printable(what)}${from}`;
}
