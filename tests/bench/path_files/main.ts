/**
 * `deno task path-files`: which of the project's files a pay-in and a delivery actually run, read from V8's own
 * function counts (node:inspector's precise coverage), not from the imports. docs/architecture.md's walks name these
 * files; issue work that moves code says "before and after" with this count. A pay-in is measured in this isolate
 * with no worker running; a delivery is measured with the worker running here while the pay-in that causes it is made
 * in a Web Worker (another isolate, so its code is not counted). Each figure is the files seen in all of three runs,
 * so a timer that fires once in a window does not count.
 */
import { Session } from "node:inspector";
import { setup } from "../../support/helpers.ts";
import { newCompany } from "../../support/helpers.ts";
import { startReceiver } from "../../support/webhook_receiver.ts";
import { registerPerson } from "../../support/rails.ts";
import { createEndpoint } from "../../support/endpoints.ts";
import { startWorker, stopWorker } from "../../../domain/infra/worker.ts";
import { taskList, upkeep } from "../../../jobs/index.ts";

const root = new URL("../../../", import.meta.url).href;
const RUNS = 3;

type Coverage = { result: { url: string; functions: { functionName: string; ranges: { count: number }[] }[] }[] };

/** With `--functions`, each file is listed with the named functions that ran in it. */
const showFunctions = Deno.args.includes("--functions");

const session = new Session();
session.connect();
const post = <T>(method: string, params?: Record<string, unknown>) =>
  new Promise<T>((resolve, reject) =>
    // deno-lint-ignore no-explicit-any
    session.post(method, params as any, (err: unknown, res: unknown) => err ? reject(err) : resolve(res as T))
  );

const lastFunctions = new Map<string, string[]>();
const functionsOf = new Map<string, string[]>();

/** The project's own files (not tests, vendored or packages) with a function that ran since the last take. */
async function filesRunSinceLastTake(): Promise<Set<string>> {
  const { result } = await post<Coverage>("Profiler.takePreciseCoverage");
  const files = new Set<string>();
  lastFunctions.clear();
  for (const script of result) {
    if (!script.url.startsWith(root)) continue;
    const path = script.url.slice(root.length);
    if (/^(tests|vendor|node_modules)\//.test(path)) continue;
    const ran = script.functions.filter((f) => f.ranges[0].count > 0);
    if (ran.length === 0) continue;
    files.add(path);
    lastFunctions.set(path, [...new Set(ran.map((f) => f.functionName).filter(Boolean))]);
  }
  return files;
}

/** The files seen in every one of `RUNS` windows of `act`. */
async function filesOf(act: () => Promise<void>): Promise<string[]> {
  let common = null as Set<string> | null;
  for (let i = 0; i < RUNS; i++) {
    await filesRunSinceLastTake();
    await act();
    const seen = await filesRunSinceLastTake();
    for (const [file, names] of lastFunctions) functionsOf.set(file, names);
    common = common === null ? seen : new Set([...common].filter((f: string) => seen.has(f)));
  }
  return [...common!].sort();
}

await post("Profiler.enable");
await post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });

const receiver = startReceiver();
const ctx = await setup("path_files");
try {
  const company = await newCompany(ctx);
  const endpoint = await createEndpoint(company, `${receiver.url}/path-files`);
  const subject = await registerPerson(company);
  const payin = { subject_id: subject.id, value: "1500.00", currency: "BRL", exchange: true };
  const pay = async () => {
    const res = await company.post("/api/sandbox/payins", payin);
    if (res.status !== 201) throw new Error(`pay-in answered ${res.status}: ${JSON.stringify(res.body)}`);
  };
  for (let i = 0; i < 3; i++) await pay(); // warm: first calls compile and fill caches
  console.error("measuring pay-ins");
  const payinFiles = await filesOf(pay);
  console.error("pay-ins measured");

  const worker = await startWorker(ctx.url, ctx.config.workerConcurrency, taskList(ctx.deps), upkeep(ctx.deps));
  const delivered = () => receiver.at("/path-files").length;
  const until = async (n: number) => {
    const deadline = Date.now() + 10_000;
    while (delivered() < n) {
      if (Date.now() > deadline) throw new Error(`${delivered()} of ${n} deliveries arrived`);
      await new Promise((r) => setTimeout(r, 5));
    }
    // the attempt is recorded after the receiver answered
    await new Promise((r) => setTimeout(r, 100));
  };
  await until((3 + RUNS) * 2); // the pay-ins above each made identified and exchange_created
  const elsewhere = new Worker(new URL("./pay_elsewhere.ts", import.meta.url), { type: "module" });
  await new Promise((resolve) => elsewhere.onmessage = resolve);
  const payElsewhere = () =>
    new Promise<void>((resolve, reject) => {
      elsewhere.onmessage = (e) => e.data === "paid" ? resolve() : reject(new Error(String(e.data)));
      elsewhere.onerror = (e) => {
        e.preventDefault();
        reject(new Error(`the paying worker failed: ${e.message}`));
      };
      elsewhere.postMessage({ url: ctx.url, token: company.token, body: { ...payin, exchange: false } });
    });
  let expected = delivered();
  const deliver = async () => {
    await payElsewhere();
    await until(++expected);
  };
  console.error("first delivery");
  await deliver(); // warm the Web Worker's own start
  const deliveryFiles = await filesOf(deliver);
  elsewhere.terminate();
  await stopWorker(worker);

  console.log(`endpoint ${endpoint.id}`);
  for (const [name, files] of [["pay-in", payinFiles], ["delivery", deliveryFiles]] as const) {
    console.log(`\n${name}: ${files.length} files`);
    for (const f of files) console.log(`  ${f}${showFunctions ? `  ${functionsOf.get(f)?.join(", ")}` : ""}`);
  }
} finally {
  await ctx.close();
  await receiver.close();
}
