// bench/replicas.mjs — the figures of docs/deploy.md: what replicas behind nginx
// (deploy/nginx/graphrun.conf) give on this machine.
//
//   node bench/replicas.mjs GRAPHRUN MODEL [--clients 8,32] [--requests-per-client 3] [--max-tokens 32]
//                          [--docs 8] [--doc-chars 400] [--prefix-requests 48] [--prefix-clients 4]
//                          [--rounds 3]
//
// 1. Throughput: greedy completions (not streamed) from C clients, each sending its requests one
//    after another, against (a) one replica with every core (-t 2 --parallel 8), (b) two replicas of
//    one core each (-t 1 --parallel 4) through nginx, (c) one replica of one core alone. Prints
//    generated tokens/s (from each answer's usage) and p50 latency per setup and C, the median of
//    --rounds runs with the setups alternated.
// 2. Prefix routing: two replicas through nginx; requests begin with one of D documents (random
//    text, each its own prefix) and end with a short question, in an order that cycles through the
//    documents. Sent without X-Prefix-Key (least_conn) and with it (the document's name: nginx's
//    consistent hash), from fresh replicas each time: the prefix cache's hit rate (the replicas'
//    graphrun_prompt_tokens_cached_total over graphrun_prompt_tokens_total) and the time to the
//    first token (streamed), median and p90.
// The replicas' KV pools hold --parallel x -c positions (4 x 512 here), less than all the
// documents together, so a replica that is sent every document evicts what it cached.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { complete, exited, freePort, makeCluster, metricValue, stream } from "../tests/deploy/cluster.mjs";

const args = process.argv.slice(2);
const [graphrun, model] = args;
const opt = (name, fallback) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : fallback;
};
const levels = opt("--clients", "8,32").split(",").map(Number);
const perClient = Number(opt("--requests-per-client", "3"));
const maxTokens = Number(opt("--max-tokens", "32"));
const nDocs = Number(opt("--docs", "8"));
const docChars = Number(opt("--doc-chars", "400"));
const prefixRequests = Number(opt("--prefix-requests", "48"));
const prefixClients = Number(opt("--prefix-clients", "4"));
const rounds = Number(opt("--rounds", "3"));
const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { startReplica, startNginx } = makeCluster(graphrun, src);

const quantile = (values, q) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
// --queue 32: no setup refuses a request at 32 clients (the default queue is 4 x --parallel).
const oneCore = ["-c", "512", "-t", "1", "--parallel", "4", "--queue", "32"];
const everyCore = ["-c", "512", "-t", "2", "--parallel", "8", "--queue", "32"];

// Stops replicas ({child}) and nginx processes alike.
async function stop(processes) {
    for (const p of processes) p.child.kill("SIGTERM");
    await Promise.all(processes.map((p) => exited(p.child)));
}

// Two fresh replicas of one core each and an nginx in front on nginxPort: [replica, replica, nginx].
async function twoBehindNginx(nginxPort) {
    const replicas = [await startReplica(model, 0, oneCore), await startReplica(model, 0, oneCore)];
    const nginx = await startNginx(replicas.map((r) => r.port), nginxPort);
    return [...replicas, { child: nginx }];
}

// C clients, each sending perClient greedy completions one after another.
async function load(base, clients) {
    const results = [];
    const start = performance.now();
    await Promise.all(Array.from({ length: clients }, async (_, c) => {
        for (let i = 0; i < perClient; i++) {
            const t0 = performance.now();
            const r = await complete(base, { prompt: `Client ${c} asks question ${i}:`, max_tokens: maxTokens,
                                             temperature: 0, logit_bias: { 2: -100 } });
            results.push({ ...r, ms: performance.now() - t0 });
        }
    }));
    const seconds = (performance.now() - start) / 1000;
    const ok = results.filter((r) => r.status === 200);
    const tokens = ok.reduce((n, r) => n + r.body.usage.completion_tokens, 0);
    return { failed: results.length - ok.length, tokPerS: tokens / seconds, p50: quantile(ok.map((r) => r.ms), 0.5) / 1000 };
}

// Each setup at each client count, `rounds` times, setups alternated; the median of the rounds.
async function throughput() {
    const setups = [
        ["1 replica, -t 2 --parallel 8", async () => [await startReplica(model, 0, everyCore)]],
        ["2 replicas, -t 1 --parallel 4 each, nginx", async (port) => twoBehindNginx(port)],
        ["1 replica, -t 1 --parallel 4 (one core)", async () => [await startReplica(model, 0, oneCore)]],
    ];
    const runs = new Map();
    for (let round = 0; round < rounds; round++) {
        for (const clients of levels) {
            for (const [name, start] of setups) {
                const nginxPort = await freePort();
                const processes = await start(nginxPort);
                const port = processes.length > 1 ? nginxPort : processes[0].port;
                const r = await load(`http://127.0.0.1:${port}`, clients);
                await stop(processes);
                const key = `${name}|${clients}`;
                runs.set(key, [...(runs.get(key) ?? []), r]);
            }
        }
    }
    console.log(`| setup | clients | failed | generated tok/s (median of ${rounds}) | p50 latency s |`);
    console.log("|---|---:|---:|---:|---:|");
    for (const clients of levels) {
        for (const [name] of setups) {
            const rs = runs.get(`${name}|${clients}`);
            const failed = rs.reduce((n, r) => n + r.failed, 0);
            console.log(`| ${name} | ${clients} | ${failed} | ${quantile(rs.map((r) => r.tokPerS), 0.5).toFixed(1)} | ` +
                        `${quantile(rs.map((r) => r.p50), 0.5).toFixed(2)} |`);
        }
    }
}

// D documents of random lowercase words (the same every run), each a prefix of its own.
function documents() {
    let seed = 12345;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const word = () => Array.from({ length: 2 + Math.floor(next() * 6) }, () => "etaoinshrdlu"[Math.floor(next() * 12)]).join("");
    return Array.from({ length: nDocs }, (_, d) => {
        let text = `Document ${d}.`;
        while (text.length < docChars) text += " " + word();
        return text;
    });
}

async function prefixRun(useKey, docs) {
    const nginxPort = await freePort();
    const replicas = await twoBehindNginx(nginxPort);
    const base = `http://127.0.0.1:${nginxPort}`;
    const firsts = [];
    let nextRequest = 0;
    await Promise.all(Array.from({ length: prefixClients }, async () => {
        while (nextRequest < prefixRequests) {
            const i = nextRequest++;
            const d = (i * 3) % docs.length;
            const headers = useKey ? { "X-Prefix-Key": `doc-${d}` } : {};
            const r = await stream(base, { prompt: `${docs[d]}\nQuestion ${i}:`, max_tokens: 4, temperature: 0 },
                                   null, headers);
            if (r.status === 200 && r.firstMs !== null) firsts.push(r.firstMs);
        }
    }));
    let cached = 0, prompt = 0;
    for (const r of replicas.slice(0, 2)) {
        cached += await metricValue(r.port, "graphrun_prompt_tokens_cached_total");
        prompt += await metricValue(r.port, "graphrun_prompt_tokens_total");
    }
    await stop(replicas);
    return { answered: firsts.length, hit: cached / prompt, p50: quantile(firsts, 0.5), p90: quantile(firsts, 0.9) };
}

async function prefixRouting() {
    const docs = documents();
    console.log(`\n${prefixRequests} requests, ${prefixClients} clients, ${docs.length} documents of ${docChars} characters:`);
    console.log("| routing | answered | prefix cache hit rate | TTFT p50 ms | TTFT p90 ms |");
    console.log("|---|---:|---:|---:|---:|");
    for (const useKey of [false, true]) {
        const r = await prefixRun(useKey, docs);
        console.log(`| ${useKey ? "X-Prefix-Key (consistent hash)" : "least_conn"} | ${r.answered} | ` +
                    `${(100 * r.hit).toFixed(1)} % | ${r.p50.toFixed(0)} | ${r.p90.toFixed(0)} |`);
    }
}

await throughput();
await prefixRouting();
process.exit(0);
