// tests/parity/llama_reference.mjs — llama.cpp's own greedy run, as the reference graphrun's parity
// tests compare against. llama.cpp comes as node-llama-cpp's prebuilt CPU build, installed outside
// the source tree by tools/parity-setup.sh.
//
//   node llama_reference.mjs --model FILE (--tokens 1,2,3 | --prompt TEXT) [-n 16] [--ctx N]
//                            [--threads 1] [--ignore-eos] [--special] [--logit-gaps]
//   node llama_reference.mjs --check      loads node-llama-cpp and its CPU binary, prints {"ok": true}
//   node llama_reference.mjs --model FILE --tokenize TEXTS.json [--special] [--attributes]
//                                         llama.cpp's tokenizer alone (the file may be vocabulary-only)
//
// Prints one JSON object on stdout:
//   {"prompt_ids": [...], "greedy_ids": [...], "stopped_at_eos": bool, "eos": id|null, "text": "..."}
// --tokens is fed as given (the caller includes BOS if it wants one). --prompt is tokenized the way
// llama.cpp's tools do: BOS first when the vocabulary asks for it (tokenizer.ggml.add_bos_token),
// then the text; special-token text such as "<s>" is plain text unless --special asks to parse it.
// Generation is greedy (temperature 0) on 1 thread, so reruns give the same ids; it stops before an
// end-of-generation token (EOS/EOT; not included in greedy_ids) unless --ignore-eos is given.
// "text" is greedy_ids detokenized after the prompt (as llama.cpp prints the continuation).
// --logit-gaps adds "top2_gaps": for each greedy id, llama.cpp's best logit minus its second best, so a
// test can tell a near-tie (where another engine may rightly pick the other token) from a real difference.
//
// --tokenize reads a JSON array of strings and loads only the vocabulary. Each text is tokenized
// as llama.cpp's tokenizer test vectors are made: no BOS, special-token text is plain text unless
// --special. Prints
//   {"results": [{"ids": [...], "text": detokenized, "text_special": detokenized with specials}],
//    "bos": id|null, "eos": id|null, "add_bos": bool (node-llama-cpp gives BOS/EOS only if control),
//    and with --attributes "n_vocab": n, "eog": [...], "control": [...], "user_defined": [...]
//    (the ids of the tokens llama.cpp holds to end generation, and of its control and user-defined ones)}
// Errors go to stderr with exit status 1.
//
// node-llama-cpp is found from $GRAPHRUN_PARITY_DIR (the folder parity-setup.sh prints), else the
// usual way from this script's folder (a node_modules beside or above it, or NODE_PATH).
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";
import { fileURLToPath, pathToFileURL } from "node:url";

const usage =
    "usage: node llama_reference.mjs --model FILE (--tokens 1,2,3 | --prompt TEXT) [-n 16] [--ctx N] " +
    "[--threads 1] [--ignore-eos] [--special] [--logit-gaps]\n" +
    "       node llama_reference.mjs --model FILE --tokenize TEXTS.json [--special] [--attributes]";

function fail(message) {
    process.stderr.write(`llama_reference: ${message}\n`);
    process.exit(1);
}

function parseArgs(argv) {
    const opts = { n: 16, threads: 1, ignoreEos: false, special: false, check: false, logitGaps: false };
    const valueOf = (i, name) => {
        if (i + 1 >= argv.length) fail(`${name} needs a value\n${usage}`);
        return argv[i + 1];
    };
    const intOf = (text, name, min) => {
        if (!/^-?\d+$/.test(text) || Number(text) < min) fail(`${name} is "${text}", expected an integer >= ${min}`);
        return Number(text);
    };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a === "--model") opts.model = valueOf(i++, a);
        else if (a === "--tokens") {
            const text = valueOf(i++, a);
            opts.tokens = text.split(",").map((t) => intOf(t.trim(), "--tokens entry", 0));
        } else if (a === "--prompt") opts.prompt = valueOf(i++, a);
        else if (a === "-n" || a === "--n-predict") opts.n = intOf(valueOf(i++, a), a, 0);
        else if (a === "--ctx") opts.ctx = intOf(valueOf(i++, a), a, 1);
        else if (a === "--threads") opts.threads = intOf(valueOf(i++, a), a, 1);
        else if (a === "--ignore-eos") opts.ignoreEos = true;
        else if (a === "--special") opts.special = true;
        else if (a === "--logit-gaps") opts.logitGaps = true;
        else if (a === "--check") opts.check = true;
        else if (a === "--tokenize") opts.tokenize = valueOf(i++, a);
        else if (a === "--attributes") opts.attributes = true;
        else if (a === "-h" || a === "--help") {
            process.stdout.write(usage + "\n");
            process.exit(0);
        } else fail(`unknown argument "${a}"\n${usage}`);
    }
    if (opts.check) return opts;
    if (!opts.model) fail(`--model is required\n${usage}`);
    if (opts.tokenize !== undefined) return opts;
    if ((opts.tokens === undefined) === (opts.prompt === undefined))
        fail(`give exactly one of --tokens and --prompt\n${usage}`);
    if (opts.tokens !== undefined && opts.tokens.length === 0) fail("--tokens is empty");
    return opts;
}

async function loadNodeLlamaCpp() {
    const here = path.dirname(fileURLToPath(import.meta.url));
    const base = process.env.GRAPHRUN_PARITY_DIR || here;
    let entry;
    try {
        entry = createRequire(path.join(base, "package.json")).resolve("node-llama-cpp");
    } catch (e) {
        fail(
            `node-llama-cpp is not installed where it was looked for (${base}); ` +
                `run tools/parity-setup.sh and set GRAPHRUN_PARITY_DIR to the folder it prints (${e.code ?? e.message})`,
        );
    }
    return import(pathToFileURL(entry).href);
}

function vocabularySize(model) {
    let n = 0;
    for (const _ of model.iterateAllTokens()) n++;
    return n;
}

async function tokenizeTexts(llama, opts) {
    let texts;
    try {
        texts = JSON.parse(await readFile(opts.tokenize, "utf8"));
    } catch (e) {
        fail(`--tokenize ${opts.tokenize}: ${e.message}`);
    }
    if (!Array.isArray(texts) || texts.some((t) => typeof t !== "string"))
        fail(`--tokenize ${opts.tokenize}: expected a JSON array of strings`);
    const model = await llama.loadModel({ modelPath: opts.model, vocabOnly: true });
    const results = texts.map((text) => {
        const ids = Array.from(model.tokenize(text, opts.special));
        return { ids, text: model.detokenize(ids, false), text_special: model.detokenize(ids, true) };
    });
    const out = { results, bos: model.tokens.bos, eos: model.tokens.eos, add_bos: model.tokens.shouldPrependBosToken };
    if (opts.attributes) Object.assign(out, tokenAttributes(model));
    process.stdout.write(JSON.stringify(out) + "\n");
    await model.dispose();
}

function tokenAttributes(model) {
    const out = { n_vocab: 0, eog: [], control: [], user_defined: [] };
    for (const token of model.iterateAllTokens()) {
        out.n_vocab++;
        if (model.isEogToken(token)) out.eog.push(token);
        const attributes = model.getTokenAttributes(token);
        if (attributes.control) out.control.push(token);
        if (attributes.userDefined) out.user_defined.push(token);
    }
    return out;
}

async function main() {
    const opts = parseArgs(process.argv.slice(2));
    const { getLlama } = await loadNodeLlamaCpp();
    // CPU only, never compile llama.cpp from source: the prebuilt binary is the reference.
    const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
    if (opts.check) {
        process.stdout.write(JSON.stringify({ ok: true }) + "\n");
        await llama.dispose();
        return;
    }
    if (opts.tokenize !== undefined) {
        await tokenizeTexts(llama, opts);
        await llama.dispose();
        return;
    }
    const model = await llama.loadModel({ modelPath: opts.model });

    let promptIds;
    if (opts.tokens !== undefined) {
        const nVocab = vocabularySize(model);
        const bad = opts.tokens.find((t) => t >= nVocab);
        if (bad !== undefined) fail(`--tokens holds ${bad}, the vocabulary of ${opts.model} has ${nVocab} tokens`);
        promptIds = opts.tokens;
    } else {
        const bos = model.tokens.bos;
        const withBos = model.tokens.shouldPrependBosToken && bos != null;
        promptIds = [...(withBos ? [bos] : []), ...model.tokenize(opts.prompt, opts.special)];
        if (promptIds.length === 0) fail("--prompt tokenizes to nothing and the model adds no BOS");
    }

    // The whole run must fit: past the end node-llama-cpp would shift the context (drop the
    // oldest tokens), which llama.cpp's plain generation does not do.
    const needed = promptIds.length + opts.n;
    const context = await model.createContext({ contextSize: opts.ctx ?? Math.max(needed, 16), threads: opts.threads });
    if (context.contextSize < needed)
        fail(`context holds ${context.contextSize} tokens, the prompt (${promptIds.length}) and -n ${opts.n} need ${needed}`);
    const sequence = context.getSequence();

    const greedy = [];
    const gaps = [];
    let stoppedAtEos = false;
    if (opts.n > 0 && opts.logitGaps) {
        // One token at a time, asking for the two best logits of each step with the greedy token.
        const next = { token: true, logits: { filter: { tokens: [], includeTop: 2 } }, options: { temperature: 0 } };
        let input = promptIds;
        while (greedy.length < opts.n) {
            const items = input.map((t, i) => (i === input.length - 1 ? [t, { generateNext: next }] : t));
            const results = await sequence.controlledEvaluate(items);
            const out = results[input.length - 1]?.next;
            if (out?.token == null || out.logits == null) fail("llama.cpp returned no token or logits");
            const [[bestToken, best], [, second]] = [...out.logits.entries()];
            if (out.logits.get(out.token) !== best) fail(`greedy token ${out.token} is not the best logit's ${bestToken}`);
            if (!opts.ignoreEos && model.isEogToken(out.token)) {
                stoppedAtEos = true;
                break;
            }
            greedy.push(out.token);
            gaps.push(best - second);
            input = [out.token];
        }
    } else if (opts.n > 0) {
        // yieldEogToken: true so an end-of-generation token is seen here, not silently swallowed.
        for await (const token of sequence.evaluate(promptIds, { temperature: 0, yieldEogToken: true })) {
            if (!opts.ignoreEos && model.isEogToken(token)) {
                stoppedAtEos = true;
                break;
            }
            greedy.push(token);
            if (greedy.length >= opts.n) break;
        }
    }

    const out = { prompt_ids: promptIds, greedy_ids: greedy, stopped_at_eos: stoppedAtEos, eos: model.tokens.eos };
    if (opts.logitGaps) out.top2_gaps = gaps;
    out.text = model.detokenize(greedy, false, promptIds);
    process.stdout.write(JSON.stringify(out) + "\n");
    await context.dispose();
    await model.dispose();
    await llama.dispose();
}

main().catch((e) => fail(e?.stack ?? String(e)));
