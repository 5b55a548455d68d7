/**
 * The floor of the bench's HTTP figures (docs/performance.md, "Against the floor"): a plain server on the service's
 * own stack (Deno.serve, Hono, postgres.js through the service's `connect`, a pool of 10) that does only what any
 * endpoint on it must pay. POST person parses the same body and upserts the row into a copy of `people` (same
 * columns, same unique key and indexes, no trigger, no foreign key); GET person selects one row of it by id;
 * `/healthz` makes the same `select 1`, shared by the checks in flight as the service's is. No token, no validation, no quota, no presenter: the service's figure as a
 * share of this one, in the same run, is what the service's own work leaves of the stack.
 *
 * Run as its own process, like the service: `deno run -A tests/bench/floor_server.ts` with DATABASE_URL and PORT;
 * it creates its table (`bench_floor_people`) when missing and prints `listening` once it serves.
 */
import { Hono } from "hono";
import { connect } from "../../domain/infra/db.ts";

const sql = connect(Deno.env.get("DATABASE_URL")!, { max: 10 });
await sql`create table if not exists bench_floor_people (like people including defaults including constraints including indexes)`;

/** One company for every row, as the service's bench runs with one company's token. */
const COMPANY = Deno.env.get("FLOOR_COMPANY_ID") ?? crypto.randomUUID();

type PersonBody = { person?: Record<string, string | null | undefined> };

const app = new Hono();
// as the service's: concurrent checks share one `select 1` in flight (routes/operations.ts)
let running: Promise<unknown> | null = null;
app.get("/healthz", async (c) => {
  await (running ??= sql`select 1`.finally(() => running = null));
  return c.json({ status: "ok" });
});
app.post("/api/v1/subject/people", async (c) => {
  const { person } = await c.req.json<PersonBody>();
  if (!person || typeof person !== "object") return c.json({ errors: { person: ["can't be blank"] } }, 422);
  const [row] = await sql`
    insert into bench_floor_people (id, company_id, document_type, document_number, social_name, fiscal_country,
      net_monthly_average_income, address_state)
    values (${crypto.randomUUID()}, ${COMPANY}, ${person.document_type ?? "cpf"}, ${person.document_number ?? ""},
      ${person.social_name ?? ""}, ${person.fiscal_country ?? ""}, ${person.net_monthly_average_income ?? null},
      ${person.address_state ?? null})
    on conflict (company_id, document_type, document_number) do update set social_name = excluded.social_name,
      updated_at = now()
    returning *`;
  return c.json({ data: row }, 201);
});
app.get("/api/v1/subject/people/:id", async (c) => {
  const [row] = await sql`select * from bench_floor_people where id = ${c.req.param("id")}`;
  return row ? c.json({ data: row }) : c.json({ errors: { id: ["not found"] } }, 404);
});

Deno.serve(
  { port: Number(Deno.env.get("PORT")), hostname: "127.0.0.1", onListen: () => console.log("listening") },
  app.fetch,
);

// a clean exit on SIGTERM, as the service's: a profile taken with --cpu-prof is written then
Deno.addSignalListener("SIGTERM", () => Deno.exit(0));
