// tests/deploy/nginx_test.mjs GRAPHRUN SOURCE_DIR — ctest's DeployNginx: two `graphrun serve` replicas
// behind nginx running deploy/nginx/graphrun.conf (its replica and listen addresses rewritten to free
// loopback ports), driven as clients would drive it:
//   1. 32 clients stream at once through the balancer: every stream whole, greedy answers equal,
//      both replicas used;
//   2. one replica drains (SIGTERM) while streams run on both: its streams finish with [DONE], the
//      requests sent meanwhile all succeed (the balancer retries the draining replica's 503 on the
//      other one), and it exits 0;
//   3. one replica is killed (SIGKILL) while streams run on both: its streams end without [DONE]
//      within seconds (never a hang), the other's finish, every later request succeeds.
// The model is a random-weight one made here, large enough that a 300-token stream lasts seconds.
// tests/deploy/run.sh skips (exit 77, saying why) without nginx or node.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { complete, exited, freePort, makeCluster, sleep, stream } from "./cluster.mjs";

const [graphrun, src] = process.argv.slice(2);
const { work, startReplica, startNginx } = makeCluster(graphrun, src);
let failures = 0;

function check(ok, what) {
    console.log(`${ok ? "ok" : "FAIL"}: ${what}`);
    if (!ok) failures++;
}

async function answered200(port) {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const m = text.match(/graphrun_requests_total\{endpoint="\/v1\/completions",status="200"\} (\d+)/);
    return m ? Number(m[1]) : 0;
}

// Starts n long streams and resolves once each has its first text (or has ended).
async function longStreams(base, n) {
    const firsts = [];
    const streams = [];
    for (let i = 0; i < n; i++) {
        firsts.push(new Promise((r) => {
            // EOS (id 2 in make-model's vocabulary) banned: a random model may pick it at once.
            streams.push(stream(base, { prompt: `Stream ${i}:`, max_tokens: 300, temperature: 0,
                                        logit_bias: { 2: -100 } }, r));
        }));
    }
    await Promise.all(firsts);
    return streams;
}

const model = path.join(work, "model.gguf");
execFileSync(graphrun, ["make-model", "--embd", "768", "--layers", "8", "--heads", "12", "--kv-heads", "4",
                        "--ff", "2048", "--vocab", "320", "--ctx", "512", "--type", "f16", model], { stdio: "ignore" });
let a = await startReplica(model);
let b = await startReplica(model);
const listen = await freePort();
await startNginx([a.port, b.port], listen);
const base = `http://127.0.0.1:${listen}`;
const name = (r) => `127.0.0.1:${r.port}`;

// 1. 32 clients at once.
{
    const body = { prompt: "Once upon a time", max_tokens: 16, temperature: 0 };
    const all = await Promise.all(Array.from({ length: 32 }, () => stream(base, body)));
    const whole = all.filter((s) => s.status === 200 && s.done && !s.error && s.finish === "length");
    check(whole.length === 32, `32 streams through nginx, all whole: ${whole.length} (${JSON.stringify(all.find((s) => !s.done) ?? {})})`);
    check(new Set(all.map((s) => s.text)).size === 1, "every greedy answer is the same text, whichever replica wrote it");
    const used = new Set(all.map((s) => s.replica));
    check(used.has(name(a)) && used.has(name(b)), `both replicas answered (${[...used].join(", ")})`);
    const counted = [await answered200(a.port), await answered200(b.port)];
    check(counted[0] > 0 && counted[1] > 0 && counted[0] + counted[1] === 32,
          `each replica's /metrics counts its share: ${counted.join(" + ")} = 32`);
}

// 2. b drains while streams run on both.
{
    const streams = await longStreams(base, 8);
    b.child.kill("SIGTERM");
    await sleep(200);
    const ready = await fetch(`http://127.0.0.1:${b.port}/health/ready`).then((r) => r.status, () => "closed");
    check(ready === 503 || ready === "closed", `the draining replica's /health/ready is 503 (${ready})`);
    const during = await Promise.all(Array.from({ length: 16 }, (_, i) =>
        complete(base, { prompt: `During ${i}`, max_tokens: 4, temperature: 0 })));
    check(during.every((r) => r.status === 200), `16 requests sent during the drain all answered 200: ${during.map((r) => r.status).join(",")}`);
    check(during.every((r) => r.replica.endsWith(name(a))), "and by the replica that is not draining");
    const ended = await Promise.all(streams);
    const onB = ended.filter((s) => s.replica === name(b));
    check(onB.length > 0, `streams were running on the draining replica: ${onB.length} of 8`);
    check(ended.every((s) => s.done && s.finish === "length" && !s.error),
          `all 8 streams finished with [DONE], the draining replica's too (${ended.map((s) => `${s.done}/${s.finish}`).join(",")})`);
    check(await exited(b.child) === 0, "the drained replica exited 0");
}

// 3. a is killed while streams run on both (b back on its port).
{
    b = await startReplica(model, b.port);
    // nginx marked b failed while it drained; past fail_timeout (10 s) one request probes it again,
    // and once that one succeeds b takes its share.
    let back = false;
    for (let i = 0; i < 40 && !back; i++) {
        const r = await complete(base, { prompt: "Probe", max_tokens: 1, temperature: 0 });
        back = r.status === 200 && r.replica === name(b);
        if (!back) await sleep(500);
    }
    check(back, "the restarted replica gets requests again");
    const streams = await longStreams(base, 8);
    const t0 = Date.now();
    a.child.kill("SIGKILL");
    const ended = await Promise.all(streams);
    const seconds = (Date.now() - t0) / 1000;
    const onA = ended.filter((s) => s.replica === name(a));
    const onB = ended.filter((s) => s.replica === name(b));
    check(onA.length > 0 && onB.length > 0, `streams ran on both replicas: ${onA.length} + ${onB.length}`);
    check(onA.every((s) => !s.done), "the killed replica's streams end without [DONE] (a client sees the cut)");
    check(onB.every((s) => s.done && s.finish === "length" && !s.error), "the other replica's streams finish whole");
    check(seconds < 120, `every stream ended, none hung (${seconds.toFixed(1)} s)`);
    const later = await Promise.all(Array.from({ length: 16 }, (_, i) =>
        complete(base, { prompt: `Later ${i}`, max_tokens: 4, temperature: 0 })));
    check(later.every((r) => r.status === 200 && r.replica.endsWith(name(b))),
          `16 later requests all answered 200 by the live replica: ${later.map((r) => `${r.status}@${r.replica}`).join(",")}`);
}

b.child.kill("SIGTERM");
await exited(b.child);
console.log(failures ? `${failures} check(s) failed` : "all checks passed");
process.exit(failures ? 1 : 0);
