/**
 * Password hashes: scrypt from node:crypto, a memory-hard function (N=2^15, r=8, p=1: 32 MiB and about 50-100 ms per
 * hash here), stored as `scrypt$N$r$p$<salt>$<hash>` (base64) so the cost can be raised later without breaking the
 * hashes already stored. The hash runs on libuv's thread pool, not on the event loop.
 */
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto";
import type { WorkQueue } from "../basics/work_pool.ts";

const COST = { N: 2 ** 15, r: 8, p: 1 };
const KEY_BYTES = 32;
const SALT_BYTES = 16;

function derive(password: string, salt: Buffer, cost: typeof COST): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEY_BYTES, { ...cost, maxmem: 256 * cost.N * cost.r }, (err, key) => {
      if (err) reject(err);
      else resolve(key);
    })
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, COST);
  return ["scrypt", COST.N, COST.r, COST.p, salt.toString("base64"), key.toString("base64")].join("$");
}

/**
 * Whether `password` matches `stored`, compared in constant time. A malformed stored hash never matches. With a
 * `pool`, the hash waits for a place in it (and throws `PoolFull` when the pool has none to give, `ShareFull` when the
 * client address it was given for holds its share already: `WorkPool.for`).
 */
export async function passwordMatches(password: string, stored: string, pool?: WorkQueue): Promise<boolean> {
  const [scheme, n, r, p, salt, key] = stored.split("$");
  if (scheme !== "scrypt" || !salt || !key) return false;
  const expected = Buffer.from(key, "base64");
  const cost = { N: Number(n), r: Number(r), p: Number(p) };
  const hash = () => derive(password, Buffer.from(salt, "base64"), cost);
  const actual = await (pool ? pool.run(hash) : hash());
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** A hash of nothing anyone knows: verified against when the username does not exist, so both cases take as long. */
export const UNKNOWN_USER_HASH = await hashPassword(crypto.randomUUID());

/** A generated password: 24 random bytes, base64url (32 characters). */
export const generatePassword = (): string => randomBytes(24).toString("base64url");
