// tests/server/serve_process.mjs — `graphrun serve` as a child process for the npm-client tests
// (tests/server/openai/e2e.mjs, tests/server/ai_sdk/e2e.mjs).
//
//   const running = await startServer(graphrun, ["-m", model, ...]);  // { server, exited, port }
//   await stopServer(running);                                         // SIGTERM drains, exit 0
import { spawn } from "node:child_process";
import assert from "node:assert/strict";

// Starts `graphrun serve --port 0 ARGS...` and reads the port it printed on stderr (echoed through).
export function startServer(graphrun, args) {
  const server = spawn(graphrun, ["serve", "--port", "0", ...args], { stdio: ["ignore", "inherit", "pipe"] });
  const exited = new Promise((resolve) => server.on("exit", (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    let err = "";
    const timer = setTimeout(() => reject(new Error("no port printed in 60 s:\n" + err)), 60000);
    server.stderr.on("data", (d) => {
      err += d;
      process.stderr.write(d);
      const m = /http:\/\/127\.0\.0\.1:(\d+)/.exec(err);
      if (m) { clearTimeout(timer); resolve({ server, exited, port: Number(m[1]) }); }
    });
    server.on("exit", (code) => reject(new Error(`graphrun serve exited with ${code}:\n${err}`)));
  });
}

// SIGTERM, then the drained server must exit 0 on its own.
export async function stopServer({ server, exited }) {
  server.kill("SIGTERM");
  const { code, signal } = await exited;
  assert.equal(signal, null);
  assert.equal(code, 0, "SIGTERM drains and exits 0");
}
