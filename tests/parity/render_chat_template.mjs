// tests/parity/render_chat_template.mjs — a chat template rendered by a real Jinja engine
// (@huggingface/jinja, the one transformers.js uses), as the reference for graphrun's chat formats.
// Installed by tools/parity-setup.sh beside node-llama-cpp.
//
//   node render_chat_template.mjs INPUT.json
//
// INPUT.json: {"template": "...", "bos_token": "...", "eos_token": "...",
//              "conversations": [{"messages": [{"role": ..., "content": ...}], "add_generation_prompt": bool}]}
// Prints {"rendered": ["...", ...]}, one text per conversation. Errors go to stderr with status 1.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";
import { fileURLToPath, pathToFileURL } from "node:url";

function fail(message) {
    process.stderr.write(`render_chat_template: ${message}\n`);
    process.exit(1);
}

async function loadJinja() {
    const base = process.env.GRAPHRUN_PARITY_DIR || path.dirname(fileURLToPath(import.meta.url));
    let entry;
    try {
        entry = createRequire(path.join(base, "package.json")).resolve("@huggingface/jinja");
    } catch (e) {
        fail(`@huggingface/jinja is not installed in ${base}; run tools/parity-setup.sh (${e.code ?? e.message})`);
    }
    return import(pathToFileURL(entry).href);
}

async function main() {
    if (process.argv.length !== 3) fail("usage: node render_chat_template.mjs INPUT.json");
    const input = JSON.parse(await readFile(process.argv[2], "utf8"));
    const { Template } = await loadJinja();
    const template = new Template(input.template);
    const rendered = input.conversations.map((c) =>
        template.render({
            messages: c.messages,
            add_generation_prompt: c.add_generation_prompt,
            bos_token: input.bos_token ?? "",
            eos_token: input.eos_token ?? "",
        }),
    );
    process.stdout.write(JSON.stringify({ rendered }) + "\n");
}

main().catch((e) => fail(e?.stack ?? String(e)));
