/**
 * The story of Facilitapay's public client, the Hyperswitch connector, against this service: each call as the
 * connector makes it (its exact bodies and headers), each answer checked against what its structs require.
 */
import assert from "node:assert/strict";
import { createUser } from "../../domain/integrators/users.ts";
import { eventually, setup } from "../support/helpers.ts";
import { startService } from "../support/service_process.ts";
import { startReceiver } from "../support/webhook_receiver.ts";
import {
  checkAuthResponse,
  checkCustomerResponse,
  checkPaymentsResponse,
  checkVoidResponse,
  checkWebhookNotification,
  WEBHOOK_TYPES,
} from "../support/facilitapay_client.ts";

// examplePersonRegistrationRequest, byte for byte
const PERSON_BODY =
  '{"person":{"document_number":"52998224725","document_type":"cpf","social_name":"Maria Souza","fiscal_country":"BR","email":"maria.souza@example.com","net_monthly_average_income":null}}';

Deno.test("the Hyperswitch connector signs in, registers, collects by PIX, refunds and voids", async (t) => {
  const ctx = await setup("hyperswitch");
  const companyId = crypto.randomUUID();
  const user = await createUser(ctx.sql, { companyId, username: "hyperswitch@merchant.example", name: "Merchant" });
  assert.ok("password" in user);
  const service = await startService(ctx.url);
  const receiver = startReceiver();
  let jwt = "";
  // what the connector sends on every call: JSON, and its bearer once signed in (facilitapay.rs)
  const call = async (method: "GET" | "POST", path: string, body?: string) => {
    const headers: Record<string, string> = { "Content-Type": "application/json" };
    if (jwt) headers.Authorization = `Bearer ${jwt}`;
    const res = await fetch(`${service.base}/api/v1${path}`, { method, headers, body });
    return { status: res.status, body: await res.json() };
  };
  const sandbox = async (path: string, body: unknown = {}) => {
    const res = await fetch(`${service.base}/api/sandbox${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${jwt}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  let subjectId = "";
  let account = "";
  let paid = "";
  let refundId = "";
  let secret = "";

  try {
    await t.step("sign_in answers {username, name, jwt}", async () => {
      const res = await call(
        "POST",
        "/sign_in",
        JSON.stringify({ user: { username: "hyperswitch@merchant.example", password: user.password } }),
      );
      assert.equal(res.status, 200);
      assert.deepEqual(checkAuthResponse(res.body), []);
      jwt = res.body.jwt;
    });

    await t.step("an endpoint in the connector's format: wrapped, the secret in the body, its 8 types", async () => {
      const res = await fetch(`${service.base}/api/v2/notifications/endpoints`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${jwt}` },
        body: JSON.stringify({
          url: `${receiver.url}/facilitapay`,
          wrap_in_notification: true,
          inject_secret_in_body: true,
          enabled_events: WEBHOOK_TYPES,
        }),
      });
      const body = await res.json();
      assert.equal(res.status, 201);
      secret = body.data.secret;
    });

    await t.step("the customer is registered before every payment: 201, then 200 with the same id", async () => {
      const first = await call("POST", "/subject/people", PERSON_BODY);
      assert.equal(first.status, 201);
      assert.deepEqual(checkCustomerResponse(first.body), []);
      const again = await call("POST", "/subject/people", PERSON_BODY);
      assert.equal(again.status, 200);
      assert.equal(again.body.data.id, first.body.data.id);
      subjectId = first.body.data.id;
    });

    await t.step("the merchant's destination account is its BRL internal account", async () => {
      const res = await call("GET", "/bank_accounts");
      assert.equal(res.status, 200);
      const brl = res.body.data.find((a: { currency: string; internal: boolean }) =>
        a.internal && a.currency === "BRL"
      );
      assert.ok(brl, "a BRL internal account exists");
      account = brl.id;
    });

    await t.step("authorize: a dynamic PIX pay-in answers a BR Code with a valid CRC16", async () => {
      const body =
        `{"transaction":{"subject_id":"${subjectId}","from_bank_account_id":null,"to_bank_account_id":"${account}","currency":"BRL","exchange_currency":"BRL","value":"150.00","use_dynamic_pix":true,"dynamic_pix_expires_at":"2099-01-01T12:00:00Z"}}`;
      const res = await call("POST", "/transactions", body);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.deepEqual(checkPaymentsResponse(res.body), []);
      assert.equal(res.body.data.status, "pending");
      const code: string = res.body.data.dynamic_pix_code;
      assert.match(code, /^000201/);
      assert.equal(code.slice(-4), crc16(code.slice(0, -4)));
      assert.ok(code.includes("5406150.00"), "the amount is in the code");
      paid = res.body.data.id;
    });

    await t.step("sync: pending until the payer pays, then identified", async () => {
      assert.equal((await call("GET", `/transactions/${paid}`)).body.data.status, "pending");
      assert.equal((await sandbox(`/transactions/${paid}/pay`)).status, 201);
      const res = await call("GET", `/transactions/${paid}`);
      assert.deepEqual(checkPaymentsResponse(res.body), []);
      assert.equal(res.body.data.status, "identified");
    });

    await t.step("the identified webhook parses as the connector's notification and names the payment", async () => {
      const arrival = await eventually("identified webhook", () => receiver.at("/facilitapay")[0]);
      const { problems, referenceId } = checkWebhookNotification(arrival.body);
      assert.deepEqual(problems, []);
      assert.equal(arrival.body.notification.type, "identified");
      assert.equal(arrival.body.notification.secret, secret);
      assert.equal(referenceId, paid);
    });

    await t.step("refund: a transaction of its own; a second refund is refused", async () => {
      const res = await call("GET", `/transactions/${paid}/refund_received_transaction`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(checkPaymentsResponse(res.body), []);
      assert.notEqual(res.body.data.id, paid);
      assert.equal(res.body.data.value, "150.00");
      refundId = res.body.data.id;
      assert.equal((await call("GET", `/transactions/${paid}/refund_received_transaction`)).status, 422);
    });

    await t.step("refund sync shows the refund; payment_refunded names the payment", async () => {
      const res = await call("GET", `/transactions/${paid}/refund_received_transaction/${refundId}`);
      assert.equal(res.status, 200);
      assert.deepEqual(checkPaymentsResponse(res.body), []);
      assert.equal(res.body.data.id, refundId);
      const refunded = await eventually(
        "payment_refunded webhook",
        () => receiver.at("/facilitapay").find((a) => a.body.notification.type === "payment_refunded"),
      );
      assert.equal(checkWebhookNotification(refunded.body).referenceId, paid);
    });

    await t.step("the BRL account's balance: 150.00 in, 150.00 back out", async () => {
      const res = await call("GET", `/bank_accounts/${account}/balance`);
      assert.deepEqual(res.body.data, {
        currency: "BRL",
        credit_value: "150.00",
        credit_transactions: 1,
        debit_value: "150.00",
        debit_transactions: 1,
        balance: "0.00",
      });
    });

    await t.step("void: a second pay-in, pending, is canceled; voiding it again is refused", async () => {
      const body =
        `{"transaction":{"subject_id":"${subjectId}","from_bank_account_id":null,"to_bank_account_id":"${account}","currency":"BRL","exchange_currency":"BRL","value":"80.00","use_dynamic_pix":true,"dynamic_pix_expires_at":"2099-01-01T12:00:00Z"}}`;
      const created = await call("POST", "/transactions", body);
      const res = await call("GET", `/transactions/${created.body.data.id}/refund`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(checkVoidResponse(res.body), []);
      assert.equal(res.body.data.status, "canceled");
      const after = await call("GET", `/transactions/${created.body.data.id}`);
      assert.equal(after.body.data.status, "canceled");
      assert.equal(typeof after.body.data.canceled_at, "string");
      assert.equal((await call("GET", `/transactions/${created.body.data.id}/refund`)).status, 422);
      assert.equal((await sandbox(`/transactions/${created.body.data.id}/pay`)).status, 422);
    });
  } finally {
    await service.stop();
    await receiver.close();
    await ctx.close();
  }
});

/** CRC16-CCITT (0x1021, init 0xFFFF) as the BR Code specification computes it, written here from that spec. */
function crc16(text: string): string {
  let crc = 0xffff;
  for (const byte of new TextEncoder().encode(text)) {
    for (let bit = 7; bit >= 0; bit--) {
      const top = ((crc >> 15) & 1) ^ ((byte >> bit) & 1);
      crc = (crc << 1) & 0xffff;
      if (top) crc ^= 0x1021;
    }
  }
  return crc.toString(16).toUpperCase().padStart(4, "0");
}
