/**
 * A pull stream's cursors (docs/webhooks.md, "Pull streams"): a position in the stream's order (its transaction's id,
 * then the event's) written as an opaque text and signed with the stream's own secret, so a forged cursor, one edited,
 * or another stream's (another company's) is refused; and stable across instances and a failover, since it holds
 * nothing but the position and the database keeps both. Pure: no database, no clock.
 */

import { createHmac, timingSafeEqual } from "node:crypto";

/** A position: after the event `event` of the transaction `txid` (decimal xid8); `event` null: before any of `txid`. */
export type Position = { txid: string; event: string | null };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const NO_EVENT = "-";

/** Hex characters of the signature kept: 96 bits. */
const SIGNATURE_CHARS = 24;

function sign(streamId: string, secret: string, body: string): string {
  return createHmac("sha256", secret).update(`${streamId}.${body}`).digest("hex").slice(0, SIGNATURE_CHARS);
}

/** The cursor of `position` in stream `streamId`. */
export function encodeCursor(streamId: string, secret: string, position: Position): string {
  const body = btoa(`${position.txid}:${position.event ?? NO_EVENT}`).replaceAll("=", "").replaceAll("+", "-")
    .replaceAll("/", "_");
  return `${body}.${sign(streamId, secret, body)}`;
}

/** The position a cursor names, or null when it is not one of this stream's (forged, edited, another stream's). */
export function decodeCursor(streamId: string, secret: string, cursor: string): Position | null {
  if (cursor.length > 200) return null;
  const [body, signature, ...rest] = cursor.split(".");
  if (rest.length || !body || !signature || signature.length !== SIGNATURE_CHARS) return null;
  const expected = new TextEncoder().encode(sign(streamId, secret, body));
  if (!timingSafeEqual(expected, new TextEncoder().encode(signature))) return null;
  let text: string;
  try {
    text = atob(body.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    return null;
  }
  const [txid, event] = text.split(":");
  if (!/^\d{1,20}$/.test(txid ?? "") || (event !== NO_EVENT && !UUID.test(event ?? ""))) return null;
  return { txid, event: event === NO_EVENT ? null : event };
}

/** Whether `a` comes before `b` in the stream's order. */
export function before(a: Position, b: Position): boolean {
  const [x, y] = [BigInt(a.txid), BigInt(b.txid)];
  if (x !== y) return x < y;
  if (a.event === b.event) return false;
  if (a.event === null) return true;
  if (b.event === null) return false;
  return a.event < b.event;
}
