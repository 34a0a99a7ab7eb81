// bench/server_load.mjs — a load tool for `graphrun serve` (or any OpenAI-compatible server): C clients
// on loopback, each sending its requests one after another, for C in the list given; prints
// requests/s, generated tokens/s (from each answer's usage) and p50/p99 latency per level.
//
//   node bench/server_load.mjs URL [--clients 1,4,8,16] [--requests-per-client 3] [--max-tokens 32]
//                              [--prompt TEXT]
// Greedy completions, not streamed; a failed request (any status but 200) is counted and named.
const args = process.argv.slice(2);
const url = args[0];
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const levels = opt("--clients", "1,4,8,16").split(",").map(Number);
const perClient = Number(opt("--requests-per-client", "3"));
const maxTokens = Number(opt("--max-tokens", "32"));
const prompt = opt("--prompt", "Once upon a time, in a small village by the sea,");

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

async function one() {
  const start = performance.now();
  const res = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ prompt, max_tokens: maxTokens, temperature: 0 }),
  });
  const body = await res.json();
  const ms = performance.now() - start;
  if (res.status !== 200) return { ms, ok: false, error: `${res.status} ${body?.error?.message}` };
  return { ms, ok: true, tokens: body.usage.completion_tokens };
}

console.log(`| clients | requests | failed | requests/s | generated tok/s | p50 latency s | p99 latency s |`);
console.log(`|---:|---:|---:|---:|---:|---:|---:|`);
for (const clients of levels) {
  const results = [];
  const start = performance.now();
  await Promise.all(Array.from({ length: clients }, async () => {
    for (let i = 0; i < perClient; i++) results.push(await one().catch((e) => ({ ok: false, error: String(e) })));
  }));
  const seconds = (performance.now() - start) / 1000;
  const ok = results.filter((r) => r.ok);
  const tokens = ok.reduce((n, r) => n + r.tokens, 0);
  const ms = ok.map((r) => r.ms).sort((a, b) => a - b);
  for (const r of results.filter((r) => !r.ok)) console.error(`failed: ${r.error}`);
  console.log(`| ${clients} | ${results.length} | ${results.length - ok.length} | ${(ok.length / seconds).toFixed(2)} | ` +
              `${(tokens / seconds).toFixed(1)} | ${(quantile(ms, 0.5) / 1000).toFixed(2)} | ${(quantile(ms, 0.99) / 1000).toFixed(2)} |`);
}
