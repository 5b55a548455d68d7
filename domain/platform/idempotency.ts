import type { Sql } from "./db.ts";

/** How long a key answers with its first response (README, "Idempotency-Key"). */
export const IDEMPOTENCY_KEY_HOURS = 24;

/**
 * A claim whose request has neither finished nor released it after this long belongs to a process that died: the
 * key is free again. Longer than any request takes (bodies are read before the claim, within their own timeout).
 */
export const CLAIM_TIMEOUT_SECONDS = 300;

export type StoredResponse = { status: number; contentType: string | null; body: Uint8Array };

export type Claim =
  /** The key is this request's: run it, then `completeIdempotentRequest` or `releaseIdempotencyKey`. */
  | { kind: "claimed"; claimId: string }
  /** The same request already ran: answer what it answered. */
  | { kind: "replay"; response: StoredResponse }
  /** The key was used for another method, path or body. */
  | { kind: "mismatch" }
  /** The same request is still running elsewhere. */
  | { kind: "in_flight" };

const encoder = new TextEncoder();

/** What makes two requests "the same": method, path with query and the exact bytes of the body. */
export async function requestFingerprint(method: string, pathWithQuery: string, body: Uint8Array): Promise<Uint8Array> {
  const head = encoder.encode(`${method} ${pathWithQuery}\n`);
  const bytes = new Uint8Array(head.length + body.length);
  bytes.set(head);
  bytes.set(body, head.length);
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

/**
 * Claims `key` for the company before the request runs. The claim is one INSERT ... ON CONFLICT committed on its
 * own, so of two identical requests arriving together exactly one gets the row; the other sees it and answers from
 * it. A key past its 24 hours, or held by a claim that timed out, is taken over as if it were new.
 */
export async function claimIdempotencyKey(
  sql: Sql,
  companyId: string,
  key: string,
  fingerprint: Uint8Array,
): Promise<Claim> {
  const claimId = crypto.randomUUID();
  // a key released or pruned between the two statements below is claimed again; twice is already unlikely
  for (let attempt = 0; attempt < 3; attempt++) {
    const [claimed] = await sql`
      insert into idempotency_keys as k (company_id, key, request_hash, claim_id)
      values (${companyId}, ${key}, ${fingerprint}, ${claimId})
      on conflict (company_id, key) do update
        set request_hash = excluded.request_hash, claim_id = excluded.claim_id, locked_at = now(),
            inserted_at = now(), response_status = null, response_content_type = null, response_body = null
        where k.inserted_at <= now() - make_interval(hours => ${IDEMPOTENCY_KEY_HOURS})
           or (k.response_status is null and k.locked_at <= now() - make_interval(secs => ${CLAIM_TIMEOUT_SECONDS}))
      returning 1`;
    if (claimed) return { kind: "claimed", claimId };
    const [held] = await sql<
      {
        same: boolean;
        response_status: number | null;
        response_content_type: string | null;
        response_body: Uint8Array;
      }[]
    >`
      select request_hash = ${fingerprint} as same, response_status, response_content_type, response_body
      from idempotency_keys
      where company_id = ${companyId} and key = ${key}`;
    if (!held) continue;
    if (!held.same) return { kind: "mismatch" };
    if (held.response_status === null) return { kind: "in_flight" };
    return {
      kind: "replay",
      response: {
        status: held.response_status,
        contentType: held.response_content_type,
        body: held.response_body ?? new Uint8Array(),
      },
    };
  }
  return { kind: "in_flight" };
}

/** Stores the answer of the request that holds the claim; a claim taken over meanwhile is left alone. */
export async function completeIdempotentRequest(
  sql: Sql,
  companyId: string,
  key: string,
  claimId: string,
  response: StoredResponse,
): Promise<void> {
  await sql`
    update idempotency_keys
    set response_status = ${response.status}, response_content_type = ${response.contentType},
        response_body = ${response.body}
    where company_id = ${companyId} and key = ${key} and claim_id = ${claimId}`;
}

/** Frees the key after an answer that is not kept (a server error): the client may retry with it. */
export async function releaseIdempotencyKey(sql: Sql, companyId: string, key: string, claimId: string) {
  await sql`delete from idempotency_keys where company_id = ${companyId} and key = ${key} and claim_id = ${claimId}`;
}

/**
 * Deletes keys past their 24 hours, every company's, in batches of `batchSize` rows and at most `maxBatches` per
 * call, so one sweep never holds locks for long; the next sweep goes on where this one stopped. Returns how many.
 */
export async function pruneIdempotencyKeys(
  sql: Sql,
  opts: { batchSize?: number; maxBatches?: number } = {},
): Promise<number> {
  const batchSize = opts.batchSize ?? 1000;
  const maxBatches = opts.maxBatches ?? 10;
  let removed = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    const { count } = await sql`
      delete from idempotency_keys
      where (company_id, key) in (
        select company_id, key from idempotency_keys
        where inserted_at <= now() - make_interval(hours => ${IDEMPOTENCY_KEY_HOURS})
        limit ${batchSize}
        for update skip locked
      )`;
    removed += count;
    if (count < batchSize) break;
  }
  return removed;
}
