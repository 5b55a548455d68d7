/**
 * What the broker transports' tests share: a delivery signed as the engine signs it, the BrokerFailure a publish or a
 * connect rejects with, and the consumer recipe of docs/webhooks.md each of them runs as written.
 */

import assert from "node:assert/strict";
import { signPayload, standardWebhookHeaders } from "../../domain/webhooks/endpoints/signature.ts";
import { BrokerFailure, type OutgoingMessage } from "../../domain/webhooks/destinations/transport.ts";

/**
 * A delivery as the engine builds it: a body `{id, type, ...fields}`, signed with `secret` under both schemes, and a
 * custom header, as an HTTP request of the same endpoint would carry them.
 */
export function signedDelivery(secret: string, type: string, fields: Record<string, unknown> = {}): OutgoingMessage {
  const id = crypto.randomUUID();
  const body = JSON.stringify({ id, type, ...fields });
  const timestamp = Math.floor(Date.now() / 1000);
  return {
    id,
    type,
    body,
    headers: {
      ...standardWebhookHeaders(id, timestamp, body, [secret]),
      "service-signature": signPayload(body, secret, { timestamp }),
      "x-tenant": "acme",
    },
  };
}

/** What `work` rejects with, asserted to be a BrokerFailure (not another error, not a success). */
export async function brokerFailure(work: Promise<unknown>): Promise<BrokerFailure> {
  try {
    await work;
  } catch (err) {
    assert.ok(err instanceof BrokerFailure, `a BrokerFailure, not ${err}`);
    return err;
  }
  assert.fail("expected a BrokerFailure");
}

/**
 * The ```ts block of docs/webhooks.md whose first line names `<file>` (`// <file>`, alone or followed by what it does):
 * a consumer recipe, run by a test as written.
 */
export async function docsRecipe(file: string): Promise<string> {
  const doc = await Deno.readTextFile(new URL("../../docs/webhooks.md", import.meta.url));
  const first = `// ${file}`;
  const block = [...doc.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]).find((code) =>
    code.startsWith(first) && /^[\n:]/.test(code.slice(first.length))
  );
  assert.ok(block, `docs/webhooks.md has a ${file} recipe`);
  return block;
}
