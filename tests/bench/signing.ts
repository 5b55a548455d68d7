/**
 * `BENCH_ONLY=signing`: what signing costs per delivery attempt, HMAC against Ed25519 (docs/webhooks.md, "Ed25519
 * signatures"), in process. Each figure times the headers `sendDelivery` makes for one attempt of a snapshot body:
 * hmac-sha256 is `service-signature` and one `v1,`; ed25519 is one `v1a,` (and two during a rotation's 24 hours).
 * The schemes run in alternating rounds, so that a pause of the machine falls on each; the median round is reported.
 * Also: Web Crypto's Ed25519 sign (the alternative to `node:crypto`'s) and a receiver's `node:crypto` verify.
 */
import { Buffer } from "node:buffer";
import { createPublicKey, verify } from "node:crypto";
import {
  newSigningKey,
  signEd25519,
  signPayload,
  standardWebhookHeaders,
} from "../../domain/webhooks/endpoints/signature.ts";
import { newSecret } from "../../domain/webhooks/endpoints/credentials.ts";
import { type Figures, round } from "./figures.ts";

const ROUNDS = 7;
const PER_ROUND = 5_000;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** µs per call of `f` over `n` calls. */
function microsPerCall(n: number, f: (i: number) => unknown): number {
  const start = performance.now();
  for (let i = 0; i < n; i++) f(i);
  return ((performance.now() - start) * 1000) / n;
}

async function microsPerAsyncCall(n: number, f: (i: number) => Promise<unknown>): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < n; i++) await f(i);
  return ((performance.now() - start) * 1000) / n;
}

export async function benchSigning(): Promise<Figures> {
  // a snapshot body of a typical size (a bank transaction's data: about 450 bytes)
  const body = JSON.stringify({
    id: crypto.randomUUID(),
    type: "non_identified_bank_transaction",
    data: {
      bank_transaction: {
        id: crypto.randomUUID(),
        value: "1500.00",
        currency: "BRL",
        movement_date: "2026-11-25",
        bank_account_id: crypto.randomUUID(),
        paid_at: "2026-11-25T22:00:00.000Z",
        subject: { document_number: "52998224725", document_type: "cpf", name: "Payer" },
      },
    },
  });
  const id = crypto.randomUUID();
  const secret = newSecret();
  const [key, previousKey] = [(await newSigningKey()).secretKey, (await newSigningKey()).secretKey];
  const t = Math.floor(Date.now() / 1000);

  const hmac = (i: number) => {
    signPayload(body, secret, { timestamp: t + i });
    return standardWebhookHeaders(id, t + i, body, [secret]);
  };
  const ed25519 = (i: number) => standardWebhookHeaders(id, t + i, body, [], { signingKeys: [key] });
  const rotating = (i: number) =>
    standardWebhookHeaders(id, t + i, body, [], { signingKeys: [key, previousKey], asymmetricFirst: true });
  for (let i = 0; i < 5_000; i++) [hmac, ed25519, rotating].forEach((f) => f(i)); // warm-up, key objects made

  const rounds = { hmac: [] as number[], ed25519: [] as number[], rotating: [] as number[] };
  for (let r = 0; r < ROUNDS; r++) {
    rounds.hmac.push(microsPerCall(PER_ROUND, hmac));
    rounds.ed25519.push(microsPerCall(PER_ROUND, ed25519));
    rounds.rotating.push(microsPerCall(PER_ROUND, rotating));
  }

  // the alternative: Web Crypto, asynchronous, over the same key
  const seed = Uint8Array.fromBase64(key.slice("whsk_".length));
  const pkcs8 = new Uint8Array([...Uint8Array.fromHex("302e020100300506032b657004220420"), ...seed]);
  const webKey = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "Ed25519" }, false, ["sign"]);
  const encoder = new TextEncoder();
  const webCrypto = await microsPerAsyncCall(
    PER_ROUND,
    (i) => crypto.subtle.sign("Ed25519", webKey, encoder.encode(`${id}.${t + i}.${body}`)),
  );

  // the receiver's side: one node:crypto verify with the published public key
  const signed = Buffer.from(`${id}.${t}.${body}`);
  const signature = Buffer.from(signEd25519(key, signed.toString()), "base64");
  const publicKey = createPublicKey(`-----BEGIN PRIVATE KEY-----\n${pkcs8.toBase64()}\n-----END PRIVATE KEY-----`);
  let verified = 0;
  const verifyUs = microsPerCall(PER_ROUND, () => verify(null, signed, publicKey, signature) && verified++);
  if (verified !== PER_ROUND) throw new Error("a signature did not verify: the bench measures nothing");

  const hmacUs = median(rounds.hmac);
  const ed25519Us = median(rounds.ed25519);
  return {
    signing_hmac_us: round(hmacUs, 2),
    signing_ed25519_us: round(ed25519Us, 2),
    signing_ed25519_vs_hmac_x: round(ed25519Us / hmacUs, 1),
    signing_ed25519_rotating_us: round(median(rounds.rotating), 2),
    signing_ed25519_webcrypto_us: round(webCrypto, 2),
    verify_ed25519_us: round(verifyUs, 2),
  };
}
