/**
 * `deno task reseal-secrets`: after SECRET_ENCRYPTION_KEY was rotated, re-seals every stored webhook signing secret,
 * every secret custom header, every endpoint's mTLS client key, every OAuth2 client secret and every stored answer of an
 * idempotent request with it, so that SECRET_ENCRYPTION_KEY_PREVIOUS can then be removed at once (docs/production.md).
 * Run it with the same environment as the service; running it again finds nothing to do.
 */

import { loadConfigWithLocalSecrets } from "../domain/infra/local_secrets.ts";
import { connect } from "../domain/infra/db.ts";
import { sealStoredAnswers } from "../domain/requests/idempotency.ts";
import { secretBoxFor } from "../domain/infra/secret_box.ts";
import { sealStoredSecrets } from "../domain/webhooks/endpoints/credentials.ts";
import { resealCustomHeaders } from "../domain/webhooks/endpoints/custom_headers.ts";
import { resealClientKeys } from "../domain/webhooks/endpoints/mtls.ts";
import { resealOAuth2Secrets } from "../domain/webhooks/endpoints/oauth2.ts";
import { resealBrokerCredentials } from "../domain/webhooks/endpoints/brokers.ts";

const config = await loadConfigWithLocalSecrets();
const sql = connect(config.databaseUrl, { max: 1 });
try {
  const box = await secretBoxFor(config);
  const count = await sealStoredSecrets(sql, box, { reseal: true });
  console.log(`${count} endpoint(s) re-sealed; every signing secret is now sealed with key ${box.keyId}`);
  const headers = await resealCustomHeaders(sql, box);
  console.log(`${headers} endpoint(s) with secret custom headers re-sealed`);
  const clientKeys = await resealClientKeys(sql, box);
  console.log(`${clientKeys} client certificate key(s) re-sealed (docs/webhooks.md, "Client certificates (mTLS)")`);
  const clients = await resealOAuth2Secrets(sql, box);
  console.log(`${clients} OAuth2 client secret(s) re-sealed with key ${box.keyId}`);
  const brokers = await resealBrokerCredentials(sql, box);
  console.log(`${brokers} broker credential(s) re-sealed (docs/webhooks.md, "Destinations")`);
  const answers = await sealStoredAnswers(sql, box, { reseal: true });
  console.log(
    `${answers.sealed} stored idempotent answer(s) re-sealed` +
      (answers.unreadable
        ? `; ${answers.unreadable} open with neither key and were left as they are (they cannot be replayed)`
        : ""),
  );
} finally {
  await sql.end();
}
