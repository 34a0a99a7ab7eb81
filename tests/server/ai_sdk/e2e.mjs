// tests/server/ai_sdk/e2e.mjs GRAPHRUN MODEL CLIENT_DIR — the Vercel AI SDK (createOpenAICompatible) against a
// real `graphrun serve`: generateObject with a zod schema; generateText with a tool over stopWhen: stepCountIs(3)
// (the tool runs, a second step follows); streamText's text equal to generateText's; then, with ajv, answers to
// several JSON schemas at temperature 1 over several seeds, on the shipped model and on a random-weight one
// (graphrun make-model), each valid or cut by the token limit. SIGTERM exits 0.
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import assert from "node:assert/strict";

import { startServer, stopServer } from "../serve_process.mjs";

const [graphrun, model, clientDir] = process.argv.slice(2);
const clientRequire = createRequire(path.join(clientDir, "package.json"));
const { generateObject, generateText, streamText, tool, stepCountIs, NoObjectGeneratedError } = clientRequire("ai");
const { createOpenAICompatible } = clientRequire("@ai-sdk/openai-compatible");
const { z } = clientRequire("zod");
const Ajv = clientRequire("ajv").default;

let checks = 0;
const check = (name) => { checks++; console.log("ok", name); };

// Schemas as a JSON Schema client would write them; each answer must validate or end with "length".
const schemas = {
  person: { type: "object", properties: { name: { type: "string", maxLength: 12 }, age: { type: "integer" },
                                          nick: { type: "string", maxLength: 6 } },
            required: ["name", "age"], additionalProperties: false },
  tags: { type: "object", properties: { tags: { type: "array", items: { type: "string", maxLength: 8 }, minItems: 1,
                                                maxItems: 3 } },
          required: ["tags"], additionalProperties: false },
  mood: { type: "object", properties: { mood: { enum: ["joy", "wrath", 3, null] }, count: { type: "integer" } },
          required: ["mood"], additionalProperties: false },
  nested: { type: "object", properties: { place: { type: "object", properties: { city: { type: "string", maxLength: 10 },
                                                                                 pos: { type: "array", items: { type: "number" }, minItems: 2, maxItems: 2 } },
                                                   required: ["city", "pos"], additionalProperties: false },
                                          ok: { type: "boolean" } },
            required: ["place"], additionalProperties: false },
};
const ajv = new Ajv({ strict: true });
const validators = Object.fromEntries(Object.entries(schemas).map(([name, s]) => [name, ajv.compile(s)]));

// Every schema at temperature 1 over 3 seeds through the chat endpoint's json_schema response_format.
async function ajvRound(port, label) {
  const tally = { valid: 0, length: 0 };
  for (const [name, schema] of Object.entries(schemas))
    for (const seed of [1, 2, 3]) {
      const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: `Answer as JSON: ${name}.` }], seed,
                               temperature: 1, max_tokens: 200,
                               response_format: { type: "json_schema", json_schema: { name, strict: true, schema } } }) });
      assert.equal(res.status, 200, `${label} ${name} seed ${seed}: ${await res.clone().text()}`);
      const choice = (await res.json()).choices[0];
      if (choice.finish_reason === "length") { tally.length++; continue; }
      assert.equal(choice.finish_reason, "stop", `${label} ${name} seed ${seed}`);
      const value = JSON.parse(choice.message.content);
      assert.ok(validators[name](value),
                `${label} ${name} seed ${seed}: ${choice.message.content} ${ajv.errorsText(validators[name].errors)}`);
      tally.valid++;
    }
  console.log(`  ${label}: ${tally.valid} valid, ${tally.length} cut by length, of ${tally.valid + tally.length}`);
}

const scratch = mkdtempSync(path.join(os.tmpdir(), "graphrun-ai-sdk-"));
let running = await startServer(graphrun, ["-m", model, "--parallel", "2", "-c", "512"]);
try {
  const provider = createOpenAICompatible({ baseURL: `http://127.0.0.1:${running.port}/v1`, name: "graphrun",
                                            supportsStructuredOutputs: true, includeUsage: true,
                                            // The SDK has no setting for it; one call per step keeps the tiny model
                                            // from repeating the call until the token limit.
                                            transformRequestBody: (body) => (body.tools ? { ...body, parallel_tool_calls: false } : body) });
  const lm = provider.chatModel("kjv-q8_0.gguf");

  // generateObject: the provider sends the zod schema as response_format json_schema; the object passes
  // the schema, or the SDK's NoObjectGeneratedError says the answer was cut by length.
  const Verse = z.object({ book: z.string().max(16), chapter: z.number().int(), mood: z.enum(["joy", "wrath"]) });
  try {
    const { object, finishReason } = await generateObject({ model: lm, schema: Verse, prompt: "A verse as JSON.",
                                                            temperature: 0, maxOutputTokens: 300, maxRetries: 0 });
    assert.equal(finishReason, "stop");
    assert.deepEqual(object, Verse.parse(object));
    console.log("  generateObject:", JSON.stringify(object));
  } catch (e) {
    if (!(NoObjectGeneratedError.isInstance(e) && e.finishReason === "length")) throw e;
    console.log("  generateObject: cut by length");
  }
  check("generateObject with a zod schema: an object that passes it, or NoObjectGeneratedError with finishReason length");

  // generateText with a tool: the first step must call it (toolChoice required), the SDK runs execute and
  // sends the result back; the second step answers in text (toolChoice none), within stepCountIs(3).
  const executed = [];
  const weather = tool({ description: "The weather of a city", inputSchema: z.object({ city: z.string().max(8) }),
                         execute: async ({ city }) => { executed.push(city); return `rain in ${city}`; } });
  const agent = await generateText({ model: lm, prompt: "The weather in Sion?", tools: { weather }, temperature: 0,
                                     maxOutputTokens: 200, maxRetries: 0, stopWhen: stepCountIs(3),
                                     prepareStep: ({ stepNumber }) => ({ toolChoice: stepNumber === 0 ? "required" : "none" }) });
  assert.ok(agent.steps.length >= 2, JSON.stringify(agent.steps.map((s) => [s.finishReason, s.content, s.request?.body])));
  assert.equal(agent.steps[0].finishReason, "tool-calls");
  assert.equal(agent.steps[0].toolCalls[0].toolName, "weather");
  assert.equal(executed.length, agent.steps[0].toolCalls.length);
  assert.equal(typeof executed[0], "string");
  assert.equal(agent.steps[0].toolResults[0].output, `rain in ${executed[0]}`);
  assert.ok(["stop", "length"].includes(agent.steps[1].finishReason), agent.steps[1].finishReason);
  assert.equal(agent.steps[1].toolCalls.length, 0);
  // Step 1 has no tool definitions in its prompt (toolChoice none), so it is longer than the bare question only
  // by the assistant's call and the tool's result.
  const bare = await generateText({ model: lm, prompt: "The weather in Sion?", temperature: 0, maxOutputTokens: 1,
                                    maxRetries: 0 });
  assert.ok(agent.steps[1].usage.inputTokens > bare.usage.inputTokens + 10,
            `the call and its result are in the prompt: ${agent.steps[1].usage.inputTokens} vs ${bare.usage.inputTokens}`);
  check("generateText with a tool over stopWhen stepCountIs(3): the call runs execute, a second step answers");

  // streamText: the same request streamed is the same text, token for token.
  const plain = { model: lm, prompt: "And God said", temperature: 0, seed: 5, maxOutputTokens: 24, maxRetries: 0 };
  const whole = await generateText(plain);
  assert.ok(whole.text.length > 0);
  const stream = streamText(plain);
  let streamed = "";
  for await (const piece of stream.textStream) streamed += piece;
  assert.equal(streamed, whole.text);
  assert.equal(await stream.finishReason, whole.finishReason);
  check("streamText's pieces concatenate to generateText's text, same finish reason");

  await ajvRound(running.port, "kjv-q8_0");
  check("ajv: every json_schema answer on kjv-q8_0 validates or has finish_reason length");
  await stopServer(running);
  running = null;

  const randomModel = path.join(scratch, "random.gguf");
  execFileSync(graphrun, ["make-model", "--ctx", "512", "--seed", "7", randomModel], { stdio: "inherit" });
  running = await startServer(graphrun, ["-m", randomModel, "--parallel", "2", "-c", "512"]);
  await ajvRound(running.port, "random weights");
  check("ajv: every json_schema answer on a random-weight model validates or has finish_reason length");
  await stopServer(running);
  running = null;
  check("SIGTERM: exit 0");
} finally {
  if (running) running.server.kill("SIGTERM");
  rmSync(scratch, { recursive: true, force: true });
}
console.log(`e2e: ${checks} checks passed`);
