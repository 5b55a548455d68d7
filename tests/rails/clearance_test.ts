/**
 * The yearly clearance limit (domain/rails/clearance.ts) as an integrator sees it: money past 20,000 USD without the
 * documents is held and the subject reproved until approval; payments at once are judged one at a time.
 */
import assert from "node:assert/strict";
import { identifyRegisteredPayers } from "../../domain/rails/bank_transactions.ts";
import { newCompany, setup } from "../support/helpers.ts";
import {
  assertCreated,
  eventsOf,
  lastEventId,
  registerBrlAccount,
  registerPerson,
  typesSince,
} from "../support/rails.ts";
import { randomCpf } from "../support/check_digits.ts";

/**
 * The 20,000 USD rule, told as the integrator lives it: money flows, then a payment takes the year over the limit
 * without documents and is held; later money stays held; documents arrive (waiting_approval); the back office
 * approves and the held payouts leave together in one wire.
 */
Deno.test("clearance: over 20,000 USD without documents holds money until the subject is approved", async (t) => {
  const ctx = await setup("rails_clearance");
  const company = await newCompany(ctx);
  try {
    const person = await registerPerson(company);
    const account = await registerBrlAccount(company, person.id);
    const payout = (value: string) =>
      company.post("/api/sandbox/payouts", {
        subject_id: person.id,
        bank_account_id: account.id,
        value,
        currency: "BRL",
      });
    const detail = async () => (await company.get(`/api/v1/subject/people/${person.id}`)).body.data;
    const held: string[] = [];

    await t.step("under the limit money moves and the person stays approved", async () => {
      // 100,000.00 BRL at 0.18 is 18,000.00 USD
      const tx = assertCreated(
        await company.post("/api/sandbox/payins", { subject_id: person.id, value: "100000.00", currency: "BRL" }),
      );
      assert.deepEqual([tx.usd_value, tx.cleared], ["18000.00", true]);
      assert.equal((await detail()).status, "approved");
    });

    await t.step("the payment that takes the year over 20,000 USD is held and the person reproved", async () => {
      const since = await lastEventId(ctx, company);
      // 15,000.00 BRL is 2,700.00 USD: 20,700.00 in the year
      const tx = assertCreated(await payout("15000.00"));
      held.push(tx.id as string);
      assert.deepEqual([tx.cleared, tx.wire_id, tx.status], [false, null, "identified"]);
      assert.deepEqual(await typesSince(ctx, company, since), [
        "identified",
        "subject_reproved",
        "document_required",
      ]);
      const [reproved] = (await eventsOf(ctx, company, "subject_reproved")).filter((e) => e.id > since!);
      assert.deepEqual(reproved.data.subject_id, person.id);
      assert.deepEqual(reproved.data.items, [
        "identity_document_missing",
        "proof_of_address_missing",
        "revenue_tax_declaration_missing",
      ]);
      assert.equal(typeof reproved.data.reason, "string");
      const [required] = (await eventsOf(ctx, company, "document_required")).filter((e) => e.id > since!);
      assert.deepEqual(required.data, {
        subject_id: person.id,
        required_documents: ["identity_document", "proof_of_address", "revenue_tax_declaration"],
      });
      const p = await detail();
      assert.equal(p.status, "reproved");
      assert.match(p.status_reason, /proof_of_address/);
      assert.match(p.status_reason, /revenue_tax_declaration/);
    });

    await t.step("a later payment stays held, without asking again", async () => {
      const since = await lastEventId(ctx, company);
      const tx = assertCreated(await payout("10.00"));
      held.push(tx.id as string);
      assert.equal(tx.cleared, false);
      assert.deepEqual(await typesSince(ctx, company, since), ["identified"]);
    });

    await t.step("documents arrive: the person waits for approval, money still held", async () => {
      const upload = (labels: string[]) =>
        company.post(`/api/v1/subject/${person.id}/documents`, {
          document: { labels, file_type: "application/pdf", file_url: `https://files.example/${labels[0]}.pdf` },
        });
      assert.equal((await upload(["cpf-number"])).status, 201);
      assert.equal((await upload(["address-proof"])).status, 201);
      assert.equal((await detail()).status, "reproved", "the tax declaration is still missing");
      assert.equal((await upload(["revenue-tax-declaration"])).status, 201);
      assert.equal((await detail()).status, "waiting_approval");

      const tx = assertCreated(await payout("5.00"));
      held.push(tx.id as string);
      assert.equal(tx.cleared, false);
    });

    await t.step("approval releases the held payouts in one wire carrying their total", async () => {
      const since = await lastEventId(ctx, company);
      const approved = assertCreated(await company.post(`/api/sandbox/subjects/${person.id}/approve`));
      assert.deepEqual([approved.status, approved.status_reason], ["approved", ""]);
      assert.deepEqual(await typesSince(ctx, company, since), ["subject_approved", "wire_created"]);
      const [wire] = (await eventsOf(ctx, company, "wire_created")).filter((e) => e.id > since!);
      assert.deepEqual(wire.data.transaction_ids, held);

      const list = (await company.get(`/api/v1/subject/${person.id}/transactions`)).body.data;
      const released = list.filter((x: { id: string }) => held.includes(x.id));
      assert.equal(released.length, 3);
      for (const x of released) assert.deepEqual([x.cleared, x.wire_id, x.status], [true, wire.data.wire_id, "wired"]);
      const [stored] = await ctx.sql`select value::text from wires where id = ${wire.data.wire_id as string}`;
      assert.equal(stored.value, "15015.00");
    });

    await t.step("with the documents on file, money over the limit moves", async () => {
      const since = await lastEventId(ctx, company);
      const tx = assertCreated(await payout("1000.00"));
      assert.equal(tx.cleared, true);
      assert.deepEqual(await typesSince(ctx, company, since), ["identified", "wire_created"]);
    });
  } finally {
    await ctx.close();
  }
});

Deno.test("payments arriving together are judged one at a time against the yearly limit", async () => {
  const ctx = await setup("rails_clearance_race");
  const company = await newCompany(ctx);
  try {
    const person = await registerPerson(company);
    const limit = 20_000;
    const each = 6_000; // USD, whose rate is 1
    const payments = 4;
    const results = await Promise.all(
      Array.from(
        { length: payments },
        () => company.post("/api/sandbox/payins", { subject_id: person.id, value: `${each}.00`, currency: "USD" }),
      ),
    );
    const cleared = results.map((r) => assertCreated(r).cleared);
    const fitUnderLimit = Math.floor(limit / each);
    assert.equal(cleared.filter(Boolean).length, fitUnderLimit, JSON.stringify(cleared));
    assert.equal(cleared.filter((c) => !c).length, payments - fitUnderLimit);
    // the subject is reproved and asked for documents once, by the payment that crossed the limit
    assert.equal((await eventsOf(ctx, company, "subject_reproved")).length, 1);
    assert.equal((await eventsOf(ctx, company, "document_required")).length, 1);
    const values = (await company.get(`/api/v1/subject/${person.id}/transaction_values`)).body.data;
    assert.deepEqual(values, [{
      currency: "USD",
      value: `${each * payments}.00`,
      usd_value: `${each * payments}.00`,
      count: payments,
    }]);
  } finally {
    await ctx.close();
  }
});

Deno.test("a back-office reproval holds money too, until approval", async () => {
  const ctx = await setup("rails_clearance_reprove");
  const company = await newCompany(ctx);
  try {
    const person = await registerPerson(company);
    assertCreated(await company.post(`/api/sandbox/subjects/${person.id}/reprove`, { items: ["old_tax_declaration"] }));
    const tx = assertCreated(
      await company.post("/api/sandbox/payins", {
        subject_id: person.id,
        value: "10.00",
        currency: "USD",
        exchange: true,
      }),
    );
    assert.deepEqual([tx.cleared, tx.exchange_id], [false, null]);
    const since = await lastEventId(ctx, company);
    assertCreated(await company.post(`/api/sandbox/subjects/${person.id}/approve`));
    assert.deepEqual(await typesSince(ctx, company, since), ["subject_approved", "exchange_created"]);
    const [exchange] = await eventsOf(ctx, company, "exchange_created");
    assert.deepEqual(exchange.data.transaction_ids, [tx.id]);
  } finally {
    await ctx.close();
  }
});

Deno.test("a payer who registers later gets the held bank transfer as an identified payin", async (t) => {
  const ctx = await setup("rails_clearance_identify");
  const company = await newCompany(ctx);
  try {
    const cpf = randomCpf();
    let bankTransactionId = "";

    await t.step("money from an unknown payer waits: non_identified_bank_transaction", async () => {
      const bt = assertCreated(
        await company.post("/api/sandbox/bank_transactions", {
          value: "300.00",
          currency: "BRL",
          payer: {
            document_number: cpf,
            document_type: "cpf",
            name: "Joana Depositante",
            bank_account: { bank: "341", branch_number: "0001", account_number: "99999", account_type: "poupanca" },
          },
        }),
      );
      bankTransactionId = bt.id as string;
      assert.deepEqual([bt.status, bt.transaction_id], ["pending", null]);
      const [event] = await eventsOf(ctx, company, "non_identified_bank_transaction");
      const data = event.data.bank_transaction as Record<string, unknown>;
      assert.equal(data.id, bt.id);
      assert.deepEqual(data.subject, {
        document_number: cpf,
        document_type: "cpf",
        name: "Joana Depositante",
        bank_account: { bank: "341", branch_number: "0001", account_number: "99999", account_type: "poupanca" },
      });
    });

    await t.step("registering that payer turns the money into a payin: identified", async () => {
      const since = await lastEventId(ctx, company);
      const person = await registerPerson(company, { document_number: cpf });
      assert.equal(person.status, "approved");
      assert.deepEqual(await typesSince(ctx, company, since), ["identified"]);
      const [identified] = (await eventsOf(ctx, company, "identified")).filter((e) => e.id > since!);
      const list = (await company.get(`/api/v1/subject/${person.id}/transactions`)).body.data;
      assert.equal(list.length, 1);
      assert.deepEqual(
        [list[0].id, list[0].kind, list[0].value, list[0].currency],
        [identified.data.transaction_id, "payin", "300.00", "BRL"],
      );
      const [bt] = await ctx.sql`select status, transaction_id from bank_transactions where id = ${bankTransactionId}`;
      assert.deepEqual([bt.status, bt.transaction_id], ["identified", list[0].id]);
    });

    await t.step("registering the same payer again changes nothing more", async () => {
      const since = await lastEventId(ctx, company);
      await registerPerson(company, { document_number: cpf, social_name: "Joana D." });
      assert.deepEqual(await typesSince(ctx, company, since), []);
    });

    await t.step("money left waiting for a payer registered meanwhile is identified by the sweep", async () => {
      // as if the process stopped between registering the payer and identifying the money
      const late = randomCpf();
      const bt = assertCreated(
        await company.post("/api/sandbox/bank_transactions", {
          value: "5.00",
          currency: "BRL",
          payer: { document_number: late, document_type: "cpf", name: "Rita" },
        }),
      );
      const personId = crypto.randomUUID();
      await ctx.sql`insert into people (id, company_id, document_type, document_number, social_name, fiscal_country)
                    values (${personId}, ${company.id}, 'cpf', ${late}, 'Rita', 'BRA')`;
      const since = await lastEventId(ctx, company);
      assert.equal(await identifyRegisteredPayers(ctx.sql), 1);
      assert.deepEqual(await typesSince(ctx, company, since), ["identified"]);
      const [row] = await ctx.sql`select status from bank_transactions where id = ${bt.id as string}`;
      assert.equal(row.status, "identified");
      assert.equal(await identifyRegisteredPayers(ctx.sql), 0, "nothing is identified twice");
    });

    await t.step("money from a registered payer is identified at once", async () => {
      const since = await lastEventId(ctx, company);
      const bt = assertCreated(
        await company.post("/api/sandbox/bank_transactions", {
          value: "1.00",
          currency: "BRL",
          payer: { document_number: cpf, document_type: "cpf", name: "Joana" },
        }),
      );
      assert.equal(bt.status, "identified");
      assert.deepEqual(await typesSince(ctx, company, since), ["identified"]);
    });
  } finally {
    await ctx.close();
  }
});
