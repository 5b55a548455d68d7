/**
 * A fresh machine with no Postgres and no JWT_SECRET: the service starts an embedded server and a generated secret, and
 * finds both again after a restart.
 */
import assert from "node:assert/strict";
import { EMBEDDED_PORT } from "../../domain/infra/embedded_pg.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { httpCompany, startService } from "../support/service_process.ts";
import { TEST_TOKENS } from "../support/helpers.ts";
import { accepts } from "../support/free_port.ts";

Deno.test("with no Postgres and no JWT_SECRET, the service runs an embedded one and a generated secret, both kept across a restart", async () => {
  setLogLevel("silent");
  const dir = await Deno.makeTempDir({ prefix: "payments-embedded-" });
  // as root, initdb runs as the postgres user, which must be able to enter the working directory
  await Deno.chmod(dir, 0o755);
  // as on a fresh machine: nothing configured, so the JWT secret is generated beside the database files
  const env = { DATABASE_URL: "embedded", JWT_SECRET: "" };
  try {
    let service = await startService("embedded", env, { cwd: dir, readyTimeoutMs: 120_000 });
    const secret = (await Deno.readTextFile(`${dir}/.data/secrets/jwt_secret`)).trim();
    const company = await httpCompany(crypto.randomUUID(), { ...TEST_TOKENS, jwtSecret: secret });
    const created = await company.call(service.base, "POST", "/api/v1/subject/people", {
      person: { document_number: "52998224725", document_type: "cpf", social_name: "Ana", fiscal_country: "BRA" },
    });
    assert.equal(created.status, 201);
    assert.ok((await Deno.stat(`${dir}/.data/postgres/PG_VERSION`)).isFile, "data under .data/postgres");
    assert.equal((await service.stop()).code, 0);
    assert.equal(await accepts(EMBEDDED_PORT), false, "the embedded server stops with the service");

    service = await startService("embedded", env, { cwd: dir, readyTimeoutMs: 120_000 });
    const shown = await company.call(service.base, "GET", `/api/v1/subject/people/${created.body.data.id}`);
    assert.deepEqual([shown.status, shown.body.data.social_name], [200, "Ana"]);
    assert.equal((await service.stop()).code, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
