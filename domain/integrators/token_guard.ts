/**
 * `TokenGuard`: whether a verified token was revoked since (docs/production.md, "Sessions and revocation"). Its own
 * file because it holds per-process state: the cached answers and the LISTEN that empties them.
 */
import type { Sql } from "../infra/db.ts";
import { log } from "../basics/log.ts";
import { companyTokensValidAfter } from "./integrators.ts";
import { sessionActive } from "./sessions.ts";

/** What the guard needs to know of a token whose signature and claims were checked already. */
export type TokenClaims = { companyId: string; iat: number; sessionId: string | null };

/** Channel the sql/0021 triggers notify, with the company id, when tokens of that company end. */
export const AUTH_REVOKED_CHANNEL = "auth_revoked";

const MAX_CACHED = 10_000;
/** A cached answer is asked again after this long, should a notification have been lost. */
const DEFAULT_MAX_AGE_MS = 30_000;

type CompanyEntry = { validAfterMs: number | null; at: number };
type SessionEntry = { companyId: string; active: boolean; at: number };

/**
 * Whether a token still opens its company: not issued at or before the company's `tokens_valid_after`, and, for a
 * token from sign-in, its session not ended. Both answers are cached, so a request pays two Map lookups; every
 * instance LISTENs on `auth_revoked` and forgets the company named, so a sign-out, a password reset, a disabled user
 * or a revoked company ends the token on every instance at once. When the notification connection comes back after a
 * loss, everything cached is forgotten (a notification sent meanwhile is lost); entries are asked again after
 * `maxAgeMs` in any case. Creates the company row on first use of its token.
 */
export class TokenGuard {
  readonly #sql: Sql;
  readonly #maxAgeMs: number;
  readonly #now: () => number;
  readonly #companies = new Map<string, CompanyEntry>();
  readonly #sessions = new Map<string, SessionEntry>();
  #listening: Promise<unknown> | null = null;
  /** LISTEN took: from then on a request checks from memory without waiting on it. */
  #listened = false;

  constructor(sql: Sql, opts: { maxAgeMs?: number; now?: () => number } = {}) {
    this.#sql = sql;
    this.#maxAgeMs = opts.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
    this.#now = opts.now ?? Date.now;
  }

  async accepts(token: TokenClaims): Promise<boolean> {
    if (!this.#listened) await this.#listen();
    const now = this.#now();
    let company = this.#companies.get(token.companyId);
    if (!company || now - company.at > this.#maxAgeMs) {
      const validAfter = await companyTokensValidAfter(this.#sql, token.companyId);
      company = { validAfterMs: validAfter?.getTime() ?? null, at: now };
      remember(this.#companies, token.companyId, company);
    }
    // `iat` has whole seconds: a token of the second of the revocation is refused too, whichever came first
    if (company.validAfterMs !== null && token.iat * 1000 <= company.validAfterMs) return false;
    if (token.sessionId === null) return true;
    let session = this.#sessions.get(token.sessionId);
    if (!session || session.companyId !== token.companyId || (session.active && now - session.at > this.#maxAgeMs)) {
      const active = await sessionActive(this.#sql, token.companyId, token.sessionId);
      session = { companyId: token.companyId, active, at: now };
      remember(this.#sessions, token.sessionId, session);
    }
    return session.active;
  }

  /** Forgets what was cached of the company: its next request asks the database. */
  forget(companyId: string) {
    this.#companies.delete(companyId);
    for (const [id, session] of this.#sessions) if (session.companyId === companyId) this.#sessions.delete(id);
  }

  #forgetAll() {
    this.#companies.clear();
    this.#sessions.clear();
  }

  /** LISTEN once, before the first answer is cached; a failed LISTEN is tried again by the next request. */
  #listen(): Promise<unknown> {
    this.#listening ??= this.#sql.listen(AUTH_REVOKED_CHANNEL, (companyId) => this.forget(companyId), () => {
      // called again each time the connection is back: what was cached may have missed a revocation
      this.#forgetAll();
    }).then(() => this.#listened = true, (err) => {
      this.#listening = null;
      log.warn("cannot listen for revoked tokens", { error: err instanceof Error ? err.message : String(err) });
      throw err;
    });
    return this.#listening;
  }
}

function remember<V>(map: Map<string, V>, key: string, value: V) {
  if (map.size >= MAX_CACHED && !map.has(key)) map.clear();
  map.set(key, value);
}
