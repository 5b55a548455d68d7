/**
 * Wire correction: a wire the bank refuses waits for a corrected account, the worker retries it (`retry_wire`) and
 * wire_created follows; bad corrections and another company's wires are refused.
 */
import assert from "node:assert/strict";
import { eventually, newCompany, setup } from "../support/helpers.ts";
import { assertCreated, eventsOf, keys, registerBrlAccount, registerPerson } from "../support/rails.ts";

const correction = {
  bank_account: {
    currency: "BRL",
    bank: { code: "341", name: "Itau" },
    branch_number: "0002",
    account_number: "654321",
    owner_document_number: null as string | null,
    owner_name: "Ana Pagadora",
    branch_country: "BRA",
    account_type: "poupanca",
  },
};

/**
 * The wire correction path (docs/sandbox.md): the receiving bank refuses the account data, the integrator hears
 * it (wire_waiting_correction), corrects the account on the wire, and the retried wire leaves (wire_created).
 */
Deno.test("wire correction: waiting_correction, corrected account, retried by the worker, wire_created", async (t) => {
  const ctx = await setup("rails_wires", { worker: true });
  const company = await newCompany(ctx);
  try {
    const person = await registerPerson(company);
    const account = await registerBrlAccount(company, person.id);
    let wireId = "";
    let transactionId = "";

    await t.step("the bank refuses the account: wire_waiting_correction names wire, account and owner", async () => {
      const tx = assertCreated(
        await company.post("/api/sandbox/payouts", {
          subject_id: person.id,
          bank_account_id: account.id,
          value: "250.75",
          currency: "BRL",
          fail_with: "AC14",
        }),
      );
      transactionId = tx.id as string;
      assert.equal(tx.status, "waiting_correction");
      const [event] = await eventsOf(ctx, company, "wire_waiting_correction");
      assert.deepEqual(event.data, {
        error_code: "AC14",
        error_description: "Creditor account type missing or invalid",
        bank_account_owner_id: person.id,
        bank_account_id: account.id,
        transaction_ids: [tx.id],
        wire_id: tx.wire_id,
      });
      wireId = tx.wire_id as string;
    });

    await t.step("a bad correction names the fields and changes nothing", async () => {
      const bad = await company.put(`/api/v1/wires/${wireId}/update_bank_account`, {
        bank_account: { ...correction.bank_account, account_type: "bogus", currency: "XXX" },
      });
      assert.equal(bad.status, 422, JSON.stringify(bad.body));
      assert.ok("currency" in bad.body.errors, JSON.stringify(bad.body));
      const missing = await company.put(`/api/v1/wires/${wireId}/update_bank_account`, { account_number: "1" });
      assert.equal(missing.status, 400);
      assert.ok(typeof missing.body.errors.detail === "string");
      // a field of the wrong type does not hide what the account's rules say of the others
      const mixed = await company.put(`/api/v1/wires/${wireId}/update_bank_account`, {
        bank_account: { ...correction.bank_account, owner_name: 5, account_number: "abc" },
      });
      assert.equal(mixed.status, 422, JSON.stringify(mixed.body));
      assert.deepEqual(mixed.body.errors, {
        owner_name: ["is invalid: must be a string"],
        account_number: ["must contain only digits, and a dash or X for the check digit"],
      });
      const [wire] = await ctx.sql`select status from wires where id = ${wireId}`;
      assert.equal(wire.status, "waiting_correction");
    });

    await t.step("the correction answers the bare wire record, waiting_confirmation", async () => {
      const res = await company.put(`/api/v1/wires/${wireId}/update_bank_account`, correction);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const wire = res.body;
      assert.deepEqual(keys(wire), [
        "currency",
        "id",
        "inserted_at",
        "status",
        "to_bank_account",
        "unretryable",
        "value",
      ]);
      assert.deepEqual(
        [wire.id, wire.currency, wire.value, wire.status, wire.unretryable],
        [wireId, "BRL", "250.75", "waiting_confirmation", false],
      );
      assert.match(wire.inserted_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/);
      const to = wire.to_bank_account;
      assert.deepEqual(
        [to.id, to.account_number, to.branch_number, to.account_type],
        [account.id, "654321", "0002", "poupanca"],
      );
      assert.deepEqual(keys(to.company), [
        "company_name",
        "document_number",
        "document_type",
        "fiscal_country",
        "id",
        "phone_number",
        "social_name",
      ]);
      assert.equal(to.company.id, company.id);
      for (const key of ["owner_company", "bank", "currency", "owner_name", "pix_info"]) assert.ok(key in to, key);
    });

    await t.step("the worker retries the wire: wire_created with the same wire and transactions", async () => {
      const created = await eventually("wire_created after the retry", async () => {
        const events = await eventsOf(ctx, company, "wire_created");
        return events.find((e) => e.data.wire_id === wireId);
      });
      assert.deepEqual(created.data, { wire_id: wireId, transaction_ids: [transactionId] });
      const [tx] = (await company.get(`/api/v1/subject/${person.id}/transactions`)).body.data;
      assert.deepEqual([tx.id, tx.status, tx.wire_id], [transactionId, "wired", wireId]);
    });

    await t.step("a wire that no longer waits for correction refuses another one: 422", async () => {
      const again = await company.put(`/api/v1/wires/${wireId}/update_bank_account`, correction);
      assert.deepEqual([again.status, again.body], [422, { errors: { status: ["is not waiting_correction"] } }]);
      // a bad account is listed with the wire's state, not hidden behind it
      const both = await company.put(`/api/v1/wires/${wireId}/update_bank_account`, {
        bank_account: { ...correction.bank_account, branch_number: "abc" },
      });
      assert.equal(both.status, 422, JSON.stringify(both.body));
      assert.deepEqual(both.body.errors, {
        status: ["is not waiting_correction"],
        branch_number: ["must contain only digits, and a dash or X for the check digit"],
      });
      const sent = assertCreated(
        await company.post("/api/sandbox/payouts", {
          subject_id: person.id,
          bank_account_id: account.id,
          value: "1.00",
          currency: "BRL",
        }),
      );
      const res = await company.put(`/api/v1/wires/${sent.wire_id}/update_bank_account`, correction);
      assert.equal(res.status, 422);
    });

    await t.step(
      "a PIX-only account is corrected with the documented body: the ISPB comes from the directory",
      async () => {
        const pixOnly = assertCreated(
          await company.post(`/api/v1/subject/${person.id}/bank_accounts`, {
            bank_account: {
              owner_name: "Ana Pagadora",
              currency: "BRL",
              pix_info: { type: "EVP", key: crypto.randomUUID() },
            },
          }),
        );
        const failed = assertCreated(
          await company.post("/api/sandbox/payouts", {
            subject_id: person.id,
            bank_account_id: pixOnly.id,
            value: "10.00",
            currency: "BRL",
            fail_with: "AC03",
          }),
        );
        const res = await company.put(`/api/v1/wires/${failed.wire_id}/update_bank_account`, correction);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.deepEqual(
          [
            res.body.to_bank_account.bank.code,
            res.body.to_bank_account.bank.ispb,
            res.body.to_bank_account.account_number,
          ],
          ["341", "60701190", "654321"],
        );
        const unknownBank = assertCreated(
          await company.post("/api/sandbox/payouts", {
            subject_id: person.id,
            bank_account_id: (assertCreated(
              await company.post(`/api/v1/subject/${person.id}/bank_accounts`, {
                bank_account: {
                  owner_name: "Ana",
                  currency: "BRL",
                  pix_info: { type: "EVP", key: crypto.randomUUID() },
                },
              }),
            )).id,
            value: "10.00",
            currency: "BRL",
            fail_with: "AC03",
          }),
        );
        const noIspb = await company.put(`/api/v1/wires/${unknownBank.wire_id}/update_bank_account`, {
          bank_account: { ...correction.bank_account, bank: { code: "999", name: "Unknown" } },
        });
        // the body names no ISPB to be blank: what to fix is the code the directory does not know
        assert.deepEqual([noIspb.status, noIspb.body], [422, {
          errors: { bank: { code: ["is not a known bank code; send bank.ispb with it"] } },
        }]);
      },
    );

    await t.step("another company's wire, an unknown id and a malformed id", async () => {
      const other = await newCompany(ctx);
      const foreign = await other.put(`/api/v1/wires/${wireId}/update_bank_account`, correction);
      assert.deepEqual([foreign.status, foreign.body], [404, { errors: { detail: "Not Found" } }]);
      const unknown = await company.put(`/api/v1/wires/${crypto.randomUUID()}/update_bank_account`, correction);
      assert.equal(unknown.status, 404);
      const malformed = await company.put(`/api/v1/wires/nope/update_bank_account`, correction);
      assert.deepEqual([malformed.status, malformed.body], [400, { errors: { id: ["is invalid"] } }]);
    });
  } finally {
    await ctx.close();
  }
});
