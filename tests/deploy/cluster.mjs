// tests/deploy/cluster.mjs — `graphrun serve` replicas behind nginx on loopback, for
// tests/deploy/nginx_test.mjs and bench/replicas.mjs: start replicas and an nginx running
// deploy/nginx/graphrun.conf (its replica and listen addresses rewritten to free ports), and send
// completions through it as a client would. Everything started lives in a temporary folder and is
// killed when the process exits.
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function exited(child) {
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
    return new Promise((r) => child.on("exit", (code) => r(code)));
}

export async function freePort() {
    const server = net.createServer();
    await new Promise((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address();
    await new Promise((r) => server.close(r));
    return port;
}

// A cluster's processes and folder. `graphrun` is the binary, `src` the source tree (for the config).
export function makeCluster(graphrun, src) {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), "graphrun-nginx-"));
    fs.chmodSync(work, 0o755);  // nginx's workers run as nobody
    const children = [];
    process.on("exit", () => {
        for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
        fs.rmSync(work, { recursive: true, force: true });
    });

    // A replica on `port` (0: any free one) with `serveArgs` (threads, --parallel, ...); resolves once
    // it printed the port it listens on.
    async function startReplica(model, port = 0, serveArgs = ["-c", "512", "-t", "1", "--parallel", "4"]) {
        const child = spawn(graphrun, ["serve", "-m", model, "--port", String(port), "--drain-timeout", "120", ...serveArgs],
                            { stdio: ["ignore", "ignore", "pipe"] });
        children.push(child);
        let log = "";
        child.stderr.on("data", (d) => { log += d; });
        for (let i = 0; i < 600; i++) {
            const m = log.match(/http:\/\/127\.0\.0\.1:(\d+)/);
            if (m) return { child, port: Number(m[1]), log: () => log };
            if (child.exitCode !== null) break;
            await sleep(50);
        }
        throw new Error(`graphrun serve did not start:\n${log}`);
    }

    // nginx with the shipped config, its example addresses replaced by the two replicas' and its own
    // port; each in a folder of its own.
    async function startNginx(ports, listen) {
        const dir = fs.mkdtempSync(path.join(work, "nginx-"));
        fs.chmodSync(dir, 0o755);
        let conf = fs.readFileSync(path.join(src, "deploy/nginx/graphrun.conf"), "utf8");
        const replace = (from, to, count) => {
            const n = conf.split(from).length - 1;
            if (n !== count) throw new Error(`deploy/nginx/graphrun.conf: expected ${count} '${from}', found ${n}`);
            conf = conf.replaceAll(from, to);
        };
        replace("127.0.0.1:8081", `127.0.0.1:${ports[0]}`, 2);
        replace("127.0.0.1:8082", `127.0.0.1:${ports[1]}`, 2);
        replace("listen 127.0.0.1:8080;", `listen 127.0.0.1:${listen};`, 1);
        fs.writeFileSync(path.join(dir, "graphrun.conf"), conf);
        const temp = ["body", "proxy", "fastcgi", "uwsgi", "scgi"].map((t) => {
            fs.mkdirSync(path.join(dir, t), { mode: 0o777 });
            fs.chmodSync(path.join(dir, t), 0o777);
            return `${t === "body" ? "client_body" : t}_temp_path ${path.join(dir, t)};`;
        });
        fs.writeFileSync(path.join(dir, "nginx.conf"), `worker_processes 1;
pid ${path.join(dir, "nginx.pid")};
events { worker_connections 1024; }
http {
    access_log off;
    ${temp.join("\n    ")}
    include ${path.join(dir, "graphrun.conf")};
}
`);
        const child = spawn("nginx", ["-p", dir, "-e", "stderr", "-c", path.join(dir, "nginx.conf"), "-g", "daemon off;"],
                            { stdio: ["ignore", "ignore", "pipe"] });
        children.push(child);
        let log = "";
        child.stderr.on("data", (d) => { log += d; });
        for (let i = 0; i < 200; i++) {
            try {
                if ((await fetch(`http://127.0.0.1:${listen}/health`)).status === 200) return child;
            } catch { /* not listening yet */ }
            if (child.exitCode !== null) break;
            await sleep(50);
        }
        throw new Error(`nginx did not start:\n${log}`);
    }

    return { work, startReplica, startNginx };
}

// One streamed completion: which replica answered, the text, whether [DONE] came, the error if any,
// and the milliseconds to the first text (`firstMs`). `started(out)` is called at the first text
// (or at the end, if none came); `headers` are sent with the request.
export async function stream(base, body, started, headers = {}) {
    const out = { status: 0, replica: "", text: "", done: false, finish: null, error: null, firstMs: null };
    const t0 = performance.now();
    try {
        const res = await fetch(`${base}/v1/completions`, {
            method: "POST", headers: { "Content-Type": "application/json", ...headers },
            body: JSON.stringify({ ...body, stream: true }) });
        out.status = res.status;
        out.replica = res.headers.get("x-graphrun-replica") ?? "";
        const decoder = new TextDecoder();
        let pending = "";
        for await (const bytes of res.body) {
            pending += decoder.decode(bytes, { stream: true });
            let cut;
            while ((cut = pending.indexOf("\n\n")) >= 0) {
                const event = pending.slice(0, cut);
                pending = pending.slice(cut + 2);
                if (!event.startsWith("data: ")) continue;
                if (event === "data: [DONE]") { out.done = true; continue; }
                const chunk = JSON.parse(event.slice(6));
                out.text += chunk.choices[0]?.text ?? "";
                out.finish = chunk.choices[0]?.finish_reason ?? out.finish;
                if (out.text && out.firstMs === null) out.firstMs = performance.now() - t0;
                if (out.text && started) { started(out); started = null; }
            }
        }
    } catch (e) {
        out.error = String(e.cause?.code ?? e.message ?? e);
    }
    if (started) started(out);  // ended before any text
    return out;
}

export async function complete(base, body) {
    try {
        const res = await fetch(`${base}/v1/completions`, {
            method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
        return { status: res.status, replica: res.headers.get("x-graphrun-replica") ?? "", body: await res.json() };
    } catch (e) {
        return { status: 0, replica: "", error: String(e.cause?.code ?? e.message ?? e) };
    }
}

// A counter of a replica's /metrics (its first sample whose line starts with `name`), 0 if absent.
export async function metricValue(port, name) {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const line = text.split("\n").find((l) => l.startsWith(name + " ") || l.startsWith(name + "{"));
    return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : 0;
}
