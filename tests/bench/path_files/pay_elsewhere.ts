/**
 * The pay-in that causes a measured delivery (tests/bench/path_files/main.ts), made in a Web Worker: its own isolate,
 * so the code it runs is not counted with the delivery's.
 */
import { connect } from "../../../domain/infra/db.ts";
import { loadConfig } from "../../../domain/infra/config.ts";
import { createApp } from "../../../routes/app.ts";
import { setLogLevel } from "../../../domain/basics/log.ts";
import { HIGH_LIMITS, TEST_JWT_SECRET } from "../../support/helpers.ts";

let app: ReturnType<typeof createApp> | null = null;

/** This module's side of the worker's messages (the checker reads it as a window's script). */
const port = self as unknown as {
  postMessage: (message: string) => void;
  onmessage: (e: MessageEvent<{ url: string; token: string; body: unknown }>) => void;
};

port.onmessage = async (e) => {
  try {
    setLogLevel("silent");
    const { url, token, body } = e.data;
    if (!app) {
      const config = loadConfig({
        DATABASE_URL: url,
        JWT_SECRET: TEST_JWT_SECRET,
        LOG_LEVEL: "silent",
        ...HIGH_LIMITS,
      });
      app = createApp({
        sql: connect(url, { max: 2 }),
        config,
        processId: crypto.randomUUID(),
        workerRunning: () => false,
      });
    }
    const res = await app.request("/api/sandbox/payins", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    port.postMessage(res.status === 201 ? "paid" : `pay-in answered ${res.status}: ${await res.text()}`);
  } catch (err) {
    port.postMessage(String(err));
  }
};

// a message posted before this module finished loading would be lost: the measuring side waits for this one
port.postMessage("ready");
