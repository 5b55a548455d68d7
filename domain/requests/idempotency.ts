/**
 * The `idempotency_keys` table: claiming a key, storing and replaying its sealed answer, and the upkeep of the rows.
 * Apart from the middleware because the worker's pruning and the sealing of stored answers (at start, and by the
 * reseal command) use it outside any request.
 */

import type { Sql } from "../infra/db.ts";
import { isSealedBytes, SEALED_PREFIX, type SecretBox } from "../infra/secret_box.ts";

/** How long a key answers with its first response (docs/api.md, "Idempotency-Key"). */
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
  | { kind: "in_flight" }
  /**
   * The same request already ran, but its stored answer does not open: sealed with a key this instance does not
   * have, altered, or copied from another key's row. It is neither replayed nor run again; `reason` is for the log.
   */
  | { kind: "unreadable"; reason: string };

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
 * A stored answer is sealed for its company and key (docs/production.md): an answer may carry a webhook signing
 * secret, and reading the database must reveal none; an answer copied into another key's row does not open.
 */
const answerContext = (companyId: string, key: string) => `idempotency_keys:${companyId}:${key}`;

/**
 * Claims `key` for the company before the request runs. The claim is one INSERT ... ON CONFLICT committed on its
 * own, so of two identical requests arriving together exactly one gets the row; the other sees it and answers from
 * it. A key past its 24 hours, or held by a claim that timed out, is taken over as if it were new.
 */
export async function claimIdempotencyKey(
  sql: Sql,
  box: SecretBox,
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
    let body: Uint8Array;
    try {
      // Plain answers of an earlier version were sealed at start (sealStoredAnswers): one that is plain now was
      // not written by this service, and is refused like one that does not open.
      body = await box.openBytes(held.response_body ?? new Uint8Array(), answerContext(companyId, key));
    } catch (err) {
      return { kind: "unreadable", reason: err instanceof Error ? err.message : String(err) };
    }
    return {
      kind: "replay",
      response: { status: held.response_status, contentType: held.response_content_type, body },
    };
  }
  return { kind: "in_flight" };
}

/**
 * Stores the answer of the request that holds the claim, its body sealed; a claim taken over meanwhile is left
 * alone.
 */
export async function completeIdempotentRequest(
  sql: Sql,
  box: SecretBox,
  companyId: string,
  key: string,
  claimId: string,
  response: StoredResponse,
): Promise<void> {
  const body = await box.sealBytes(response.body, answerContext(companyId, key));
  await sql`
    update idempotency_keys
    set response_status = ${response.status}, response_content_type = ${response.contentType},
        response_body = ${body}
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

/**
 * Seals every stored answer still in plain text (written by a version that did not seal them) and, with `reseal`,
 * re-seals what an older key sealed, so that SECRET_ENCRYPTION_KEY_PREVIOUS can be removed without waiting for
 * the answers to expire. In batches of `batchSize` rows in key order, each row rewritten only if it is still the
 * answer that was read (a key claimed again meanwhile is left alone). An answer that no key opens is left as it is
 * and counted apart: it cannot be replayed, and rewriting it would not change that. A maintenance pass over every
 * company, hence no company filter.
 */
export async function sealStoredAnswers(
  sql: Sql,
  box: SecretBox,
  opts: { reseal: boolean; batchSize?: number },
): Promise<{ sealed: number; unreadable: number }> {
  const wanted = new TextEncoder().encode(opts.reseal ? box.currentPrefix : SEALED_PREFIX);
  const batchSize = opts.batchSize ?? 500;
  let sealed = 0;
  let unreadable = 0;
  let after: { company_id: string; key: string } | null = null;
  for (;;) {
    const rows: { company_id: string; key: string; claim_id: string; response_body: Uint8Array }[] = await sql`
      select company_id, key, claim_id, response_body from idempotency_keys
      where response_body is not null
        and substring(response_body from 1 for ${wanted.length}) <> ${wanted}
        ${after ? sql`and (company_id, key) > (${after.company_id}::uuid, ${after.key})` : sql``}
      order by company_id, key
      limit ${batchSize}`;
    if (rows.length === 0) return { sealed, unreadable };
    after = rows[rows.length - 1];
    const rewrites = (await Promise.all(rows.map(async (row) => {
      const context = answerContext(row.company_id, row.key);
      try {
        const plain = isSealedBytes(row.response_body)
          ? await box.openBytes(row.response_body, context)
          : row.response_body;
        return {
          company_id: row.company_id,
          key: row.key,
          claim_id: row.claim_id,
          was: row.response_body.toHex(),
          body: (await box.sealBytes(plain, context)).toHex(),
        };
      } catch {
        unreadable++;
        return null;
      }
    }))).filter((r) => r !== null);
    if (rewrites.length === 0) continue;
    // one statement a batch (a row at a time took half a millisecond each); a row rewritten only if unchanged
    const updated = await sql`
      update idempotency_keys k set response_body = decode(r.body, 'hex')
      from jsonb_to_recordset(${sql.json(rewrites)}::jsonb)
        as r(company_id uuid, key text, claim_id uuid, was text, body text)
      where k.company_id = r.company_id and k.key = r.key and k.claim_id = r.claim_id
        and k.response_body = decode(r.was, 'hex')`;
    sealed += updated.count;
  }
}
