/**
 * docs/sandbox.md, "Magic values", played row by row: each outcome of each sandbox flow reached by the value the page
 * documents, as an integrator's receiver would see it (the answer, then the events in order). The page's table is read
 * so it lists exactly the outcomes played here; the account endings are also checked with the sandbox off.
 */
import assert from "node:assert/strict";
import { type Company, newCompany, type Reply, setup, type TestContext } from "../support/helpers.ts";
import { lastEventId, registerBrlAccount, registerPerson, typesSince } from "../support/rails.ts";
import { bankRefusal, REFUSING_ACCOUNT_ENDINGS } from "../../domain/rails/sandbox_outcomes.ts";

const HELD = ["subject_reproved", "document_required"];
const THIRD_PARTY = "11144477735";

/** The table's rows as "flow / outcome", a blank flow cell carrying the row above's. */
async function documentedOutcomes(): Promise<string[]> {
  const page = await Deno.readTextFile(new URL("../../docs/sandbox.md", import.meta.url));
  const section = page.slice(page.indexOf("\n## Magic values\n")).split(/\n## /)[1];
  const rows = section.split("\n").filter((l) => l.startsWith("|")).slice(2);
  let flow = "";
  return rows.map((row) => {
    const [cells0, cells1] = row.split("|").slice(1, 3).map((c) => c.trim().replaceAll("`", ""));
    flow = cells0 || flow;
    return `${flow} / ${cells1}`;
  });
}

type Story = (ctx: TestContext, company: Company) => Promise<void>;

/** What an integrator does and sees once `act` ran: its answer, and the events sent since, in order. */
async function play(ctx: TestContext, company: Company, act: () => Promise<Reply>) {
  const since = await lastEventId(ctx, company);
  const res = await act();
  assert.ok([200, 201].includes(res.status), JSON.stringify(res.body));
  return { data: res.body.data, events: await typesSince(ctx, company, since) };
}

async function internalAccount(company: Company, currency: string): Promise<string> {
  const res = await company.get("/api/v1/bank_accounts");
  return res.body.data.find((a: { internal: boolean; currency: string }) => a.internal && a.currency === currency).id;
}

/** A BRL account of the subject whose number is `accountNumber` (a magic ending, or an ordinary number). */
async function brlAccount(company: Company, subjectId: string, accountNumber: string): Promise<string> {
  const res = await company.post(`/api/v1/subject/${subjectId}/bank_accounts`, {
    bank_account: {
      owner_name: "Ana Pagadora",
      currency: "BRL",
      account_number: accountNumber,
      branch_number: "0001",
      account_type: "conta-corrente",
      bank: { code: "341", ispb: "60701190", name: "Itau" },
    },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data.id;
}

/** A pay-in through the transactions API, pending until the sandbox pays or expires it. */
async function apiPayin(company: Company, subjectId: string, fields: Record<string, unknown> = {}) {
  const res = await company.post("/api/v1/transactions", {
    transaction: {
      subject_id: subjectId,
      to_bank_account_id: await internalAccount(company, "BRL"),
      currency: "BRL",
      exchange_currency: "BRL",
      value: "150.00",
      ...fields,
    },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data.id as string;
}

const money = (subject_id: string, value: string, currency: string, more: Record<string, unknown> = {}) => ({
  subject_id,
  value,
  currency,
  ...more,
});

const STORIES: Record<string, Story> = {
  "POST /api/sandbox/payins / identified": async (ctx, company) => {
    const { id } = await registerPerson(company);
    const { data, events } = await play(
      ctx,
      company,
      () => company.post("/api/sandbox/payins", money(id, "150.00", "BRL")),
    );
    assert.deepEqual([data.status, data.cleared, events], ["identified", true, ["identified"]]);
  },
  "POST /api/sandbox/payins / held for clearance": async (ctx, company) => {
    const { id } = await registerPerson(company);
    const { data, events } = await play(
      ctx,
      company,
      () => company.post("/api/sandbox/payins", money(id, "20000.01", "USD")),
    );
    assert.deepEqual([data.status, data.cleared, events], ["identified", false, ["identified", ...HELD]]);
  },
  "POST /api/sandbox/card_payments / approved": async (ctx, company) => {
    const { id } = await registerPerson(company);
    const body = money(id, "99.90", "BRL", { outcome: "approved" });
    const { data, events } = await play(ctx, company, () => company.post("/api/sandbox/card_payments", body));
    assert.deepEqual([data.status, data.cleared, events], ["approved", true, ["payment_approved"]]);
  },
  "POST /api/sandbox/card_payments / refused": async (ctx, company) => {
    const { id } = await registerPerson(company);
    const body = money(id, "99.90", "BRL", { outcome: "failed" });
    const { data, events } = await play(ctx, company, () => company.post("/api/sandbox/card_payments", body));
    assert.deepEqual([data.status, events], ["failed", ["payment_failed"]]);
  },
  "POST /api/sandbox/card_payments / held for clearance": async (ctx, company) => {
    const { id } = await registerPerson(company);
    const body = money(id, "20000.01", "USD", { outcome: "approved" });
    const { data, events } = await play(ctx, company, () => company.post("/api/sandbox/card_payments", body));
    assert.deepEqual([data.status, data.cleared, events], ["approved", false, ["payment_approved", ...HELD]]);
  },
  "POST /api/sandbox/payouts / wired": async (ctx, company) => {
    const { id } = await registerPerson(company);
    const account = (await registerBrlAccount(company, id)).id;
    const body = money(id, "40.00", "BRL", { bank_account_id: account });
    const { data, events } = await play(ctx, company, () => company.post("/api/sandbox/payouts", body));
    assert.deepEqual([data.status, events], ["wired", ["identified", "wire_created"]]);
  },
  "POST /api/sandbox/payouts / refused": async (ctx, company) => {
    const { id } = await registerPerson(company);
    // fail_with on an ordinary account
    const ordinary = (await registerBrlAccount(company, id)).id;
    const withCode = money(id, "40.00", "BRL", { bank_account_id: ordinary, fail_with: "AC14" });
    const coded = await play(ctx, company, () => company.post("/api/sandbox/payouts", withCode));
    assert.deepEqual([coded.data.status, coded.events], ["waiting_correction", [
      "identified",
      "wire_waiting_correction",
    ]]);
    const wire = await company.get(`/api/v1/wires/${coded.data.wire_id}`);
    assert.equal(wire.body.data.error_code, "AC14");
    // an MXN account whose CLABE carries the AC03 ending, without fail_with
    const mexican = await registerPerson(company, {
      document_number: "GOMA900101HDFRRN01",
      document_type: "curp",
      fiscal_country: "MEX",
    });
    const clabe = await company.post(`/api/v1/subject/${mexican.id}/bank_accounts`, {
      bank_account: {
        currency: "MXN",
        owner_name: "Mario Gomez",
        account_number: "002180049999991303",
        account_type: "conta-corrente",
        bank: { code: "002", name: "Banamex" },
      },
    });
    assert.equal(clabe.status, 201, JSON.stringify(clabe.body));
    const byEnding = money(mexican.id, "500.00", "MXN", { bank_account_id: clabe.body.data.id });
    const ended = await play(ctx, company, () => company.post("/api/sandbox/payouts", byEnding));
    assert.deepEqual(ended.events, ["identified", "wire_waiting_correction"]);
    assert.equal((await company.get(`/api/v1/wires/${ended.data.wire_id}`)).body.data.error_code, "AC03");
  },
  "POST /api/sandbox/payouts / held for clearance": async (ctx, company) => {
    const { id } = await registerPerson(company);
    const account = (await registerBrlAccount(company, id)).id;
    const body = money(id, "111111.17", "BRL", { bank_account_id: account });
    const { data, events } = await play(ctx, company, () => company.post("/api/sandbox/payouts", body));
    assert.deepEqual([data.status, data.cleared, data.wire_id, events], ["identified", false, null, [
      "identified",
      ...HELD,
    ]]);
  },
  "POST /api/v1/transactions, a pay-out / wired": async (ctx, company) => {
    const { id } = await registerPerson(company);
    const account = await brlAccount(company, id, "123456");
    const { data, events } = await play(ctx, company, () =>
      company.post("/api/v1/transactions", {
        transaction: {
          subject_id: id,
          to_bank_account_id: account,
          currency: "BRL",
          exchange_currency: "BRL",
          value: "40.00",
        },
      }));
    assert.deepEqual([data.status, events], ["wired", ["identified", "wire_created"]]);
  },
  "POST /api/v1/transactions, a pay-out / refused": async (ctx, company) => {
    const { id } = await registerPerson(company);
    const account = await brlAccount(company, id, "999999130-3");
    const { data, events } = await play(ctx, company, () =>
      company.post("/api/v1/transactions", {
        transaction: {
          subject_id: id,
          to_bank_account_id: account,
          currency: "BRL",
          exchange_currency: "BRL",
          value: "40.00",
        },
      }));
    assert.deepEqual([data.status, events], ["identified", ["identified", "wire_waiting_correction"]]);
    const wire = await company.get(`/api/v1/wires/${data.wire_id}`);
    assert.deepEqual([wire.body.data.status, wire.body.data.error_code], ["waiting_correction", "AC03"]);
  },
  "POST /api/v1/transactions, a pay-in, then /api/sandbox/transactions/:id/pay / identified": async (ctx, company) => {
    const payin = await apiPayin(company, (await registerPerson(company)).id);
    const { data, events } = await play(ctx, company, () => company.post(`/api/sandbox/transactions/${payin}/pay`, {}));
    assert.deepEqual([data.status, events], ["identified", ["identified"]]);
  },
  "POST /api/v1/transactions, a pay-in, then /api/sandbox/transactions/:id/pay / refused": async (ctx, company) => {
    const subject = await registerPerson(company);
    const payin = await apiPayin(company, subject.id, { use_dynamic_pix: true, refuse_third_party: true });
    const { data, events } = await play(
      ctx,
      company,
      () => company.post(`/api/sandbox/transactions/${payin}/pay`, { payer_document_number: THIRD_PARTY }),
    );
    assert.deepEqual([data.status, events], ["canceled", ["payment_refunded"]]);
  },
  "POST /api/v1/transactions, a pay-in, then /api/sandbox/transactions/:id/pay / expired": async (ctx, company) => {
    const payin = await apiPayin(company, (await registerPerson(company)).id);
    const { data, events } = await play(ctx, company, () => company.post(`/api/sandbox/transactions/${payin}/expire`));
    assert.deepEqual([data.status, events], ["canceled", ["payment_expired"]]);
  },
  "POST /api/v1/transactions, a pay-in, then /api/sandbox/transactions/:id/pay / held for clearance": async (
    ctx,
    company,
  ) => {
    const payin = await apiPayin(company, (await registerPerson(company)).id, {
      to_bank_account_id: await internalAccount(company, "USD"),
      currency: "USD",
      exchange_currency: "USD",
      value: "20000.01",
    });
    const { data, events } = await play(ctx, company, () => company.post(`/api/sandbox/transactions/${payin}/pay`, {}));
    assert.deepEqual([data.status, data.cleared, events], ["identified", false, ["identified", ...HELD]]);
  },
  "POST /api/sandbox/pix_charges, then /pay / identified": async (ctx, company) => {
    const { id } = await registerPerson(company);
    const charge = (await company.post("/api/sandbox/pix_charges", { subject_id: id, value: "50.00" })).body.data.id;
    const { data, events } = await play(ctx, company, () => company.post(`/api/sandbox/pix_charges/${charge}/pay`, {}));
    assert.deepEqual([data.status, data.cleared, events], ["identified", true, ["identified"]]);
  },
  "POST /api/sandbox/pix_charges, then /pay / refused": async (ctx, company) => {
    const { id } = await registerPerson(company);
    const created = await company.post("/api/sandbox/pix_charges", {
      subject_id: id,
      value: "50.00",
      refuse_third_party: true,
    });
    const { data, events } = await play(
      ctx,
      company,
      () =>
        company.post(`/api/sandbox/pix_charges/${created.body.data.id}/pay`, { payer_document_number: THIRD_PARTY }),
    );
    assert.deepEqual([data.status, events], ["refunded", ["payment_refunded"]]);
  },
  "POST /api/sandbox/pix_charges, then /pay / expired": async (ctx, company) => {
    const { id } = await registerPerson(company);
    const charge = (await company.post("/api/sandbox/pix_charges", { subject_id: id, value: "50.00" })).body.data.id;
    const { data, events } = await play(ctx, company, () => company.post(`/api/sandbox/pix_charges/${charge}/expire`));
    assert.deepEqual([data.status, events], ["expired", ["payment_expired"]]);
  },
  "POST /api/sandbox/pix_charges, then /pay / held for clearance": async (ctx, company) => {
    const { id } = await registerPerson(company);
    const charge =
      (await company.post("/api/sandbox/pix_charges", { subject_id: id, value: "111111.17" })).body.data.id;
    const { data, events } = await play(ctx, company, () => company.post(`/api/sandbox/pix_charges/${charge}/pay`, {}));
    assert.deepEqual([data.status, data.cleared, events], ["identified", false, ["identified", ...HELD]]);
  },
  "POST /api/sandbox/bank_transactions / identified": async (ctx, company) => {
    const payer = await registerPerson(company);
    const body = {
      value: "300.00",
      currency: "BRL",
      payer: { document_number: payer.document_number, document_type: "cpf", name: "Ana Pagadora" },
    };
    const { data, events } = await play(ctx, company, () => company.post("/api/sandbox/bank_transactions", body));
    assert.deepEqual([data.status, events], ["identified", ["identified"]]);
  },
  "POST /api/sandbox/bank_transactions / not identified": async (ctx, company) => {
    const [fresh] = (await company.get("/api/sandbox/test_documents?type=cpf")).body.data;
    const body = {
      value: "300.00",
      currency: "BRL",
      payer: { document_number: fresh.value, document_type: "cpf", name: "Ana" },
    };
    const { data, events } = await play(ctx, company, () => company.post("/api/sandbox/bank_transactions", body));
    assert.deepEqual([data.status, data.transaction_id, events], ["pending", null, [
      "non_identified_bank_transaction",
    ]]);
  },
};

Deno.test("every documented sandbox outcome is reached by its documented value", async (t) => {
  await t.step("docs/sandbox.md's table lists exactly the outcomes played here", async () => {
    assert.deepEqual(await documentedOutcomes(), Object.keys(STORIES));
  });

  const ctx = await setup("sandbox_magic_values");
  try {
    const company = await newCompany(ctx);
    for (const [name, story] of Object.entries(STORIES)) await t.step(name, () => story(ctx, company));
  } finally {
    await ctx.close();
  }
});

Deno.test("the account endings: each code, only the digits, only the last ten", () => {
  assert.deepEqual(Object.values(REFUSING_ACCOUNT_ENDINGS).sort(), ["AC03", "AC14", "AG03", "CH11"]);
  for (const [ending, code] of Object.entries(REFUSING_ACCOUNT_ENDINGS)) {
    assert.equal(bankRefusal(ending), code);
    assert.equal(bankRefusal(`12-${ending}`), code);
    assert.equal(bankRefusal(`US${ending}`), code);
  }
  assert.equal(bankRefusal("999999130-3"), "AC03");
  assert.equal(bankRefusal("9999991303-1"), null, "the check digit counts");
  assert.equal(bankRefusal("999991303"), null, "nine digits are not an ending");
  assert.equal(bankRefusal("123456"), null);
  assert.equal(bankRefusal(null), null);
});

Deno.test("with the sandbox off, an account ending is an ordinary account: the pay-out is wired", async () => {
  const ctx = await setup("sandbox_magic_values_off", { env: { SANDBOX: "false" } });
  try {
    const company = await newCompany(ctx);
    const { id } = await registerPerson(company);
    const account = await brlAccount(company, id, "999999130-3");
    const { data, events } = await play(ctx, company, () =>
      company.post("/api/v1/transactions", {
        transaction: {
          subject_id: id,
          to_bank_account_id: account,
          currency: "BRL",
          exchange_currency: "BRL",
          value: "40.00",
        },
      }));
    assert.deepEqual([data.status, events], ["wired", ["identified", "wire_created"]]);
    assert.equal((await company.post("/api/sandbox/payins", money(id, "1.00", "BRL"))).status, 404, "no sandbox");
  } finally {
    await ctx.close();
  }
});
