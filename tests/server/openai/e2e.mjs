// tests/server/openai/e2e.mjs GRAPHRUN MODEL CLIENT_DIR — the official openai npm client against a real
// `graphrun serve` on a free loopback port: completions and chat, whole and streamed; 16 concurrent
// clients whose greedy answers equal a single client's and whose seeded answers equal the same
// request alone (batch invariance); chat.completions.parse with a zod schema (zodResponseFormat);
// a tool loop and a streamed tool call; embeddings of a string and a list, base64 and float; errors as the
// client's typed exceptions; the Responses API, whole, streamed, with a function call and refused fields;
// SIGTERM exits 0.
import { createRequire } from "node:module";
import path from "node:path";
import assert from "node:assert/strict";

import { startServer, stopServer } from "../serve_process.mjs";

const [graphrun, model, clientDir] = process.argv.slice(2);
const clientRequire = createRequire(path.join(clientDir, "package.json"));
const OpenAI = clientRequire("openai");
const { zodResponseFormat } = clientRequire("openai/helpers/zod");
const { LengthFinishReasonError } = clientRequire("openai/error");
const { z } = clientRequire("zod");
const KEY = "graphrun-e2e-key";

let running = await startServer(graphrun, ["-m", model, "--parallel", "4", "--queue", "16", "-c", "512",
                                            "--api-key", KEY]);
const { port } = running;
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: KEY, maxRetries: 0 });
let checks = 0;
const check = (name) => { checks++; console.log("ok", name); };

try {
  const models = await client.models.list();
  assert.equal(models.data[0].id, "kjv-q8_0.gguf");
  check("models.list");

  const greedy = { model: "gpt-4o", temperature: 0, max_tokens: 24 };
  const whole = await client.completions.create({ ...greedy, prompt: "And God said" });
  assert.equal(whole.model, "kjv-q8_0.gguf");
  assert.equal(whole.choices[0].finish_reason, "length");
  assert.equal(whole.usage.completion_tokens, 24);
  assert.ok(whole.choices[0].text.length > 0);
  let streamed = "", finish = null, usage = null;
  for await (const chunk of await client.completions.create({ ...greedy, prompt: "And God said", stream: true,
                                                              stream_options: { include_usage: true } })) {
    if (chunk.usage) usage = chunk.usage;
    if (!chunk.choices.length) continue;
    streamed += chunk.choices[0].text;
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  assert.equal(streamed, whole.choices[0].text);
  assert.equal(finish, "length");
  assert.equal(usage.completion_tokens, 24);
  check("completions, whole and streamed");

  const messages = [{ role: "system", content: "Speak as the scripture." }, { role: "user", content: "Who made light?" }];
  const chat = await client.chat.completions.create({ ...greedy, messages, max_tokens: 40 });
  const answer = chat.choices[0].message.content;
  assert.ok(answer.trim().length > 0, "a non-empty chat answer");
  let chatStreamed = "", chatFinish = null;
  for await (const chunk of await client.chat.completions.create({ ...greedy, messages, max_tokens: 40, stream: true })) {
    chatStreamed += chunk.choices[0]?.delta?.content ?? "";
    chatFinish = chunk.choices[0]?.finish_reason ?? chatFinish;
  }
  assert.equal(chatStreamed, answer);
  assert.equal(chatFinish, chat.choices[0].finish_reason);
  check("chat.completions, whole and streamed");

  // An agent loop's second turn: the assistant's tool call (content null) and the tool's answer
  // replayed as the client sends them back; and fields graphrun does not honour are a 400 naming them.
  const toolTurn = await client.chat.completions.create({ ...greedy, max_tokens: 8, messages: [
    { role: "user", content: "What saith the weather?" },
    { role: "assistant", content: null,
      tool_calls: [{ id: "call_1", type: "function", function: { name: "weather", arguments: '{"city":"Sion"}' } }] },
    { role: "tool", tool_call_id: "call_1", content: "rain for forty days" }] });
  assert.equal(toolTurn.choices[0].message.role, "assistant");
  assert.ok(toolTurn.usage.prompt_tokens > 30, "the tool call and its answer are in the prompt");
  await assert.rejects(
    client.chat.completions.create({ ...greedy, messages,
                                     tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }],
                                     tool_choice: { type: "function", function: { name: "g" } } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "tool_choice.function.name");
  await assert.rejects(client.completions.create({ ...greedy, prompt: "x", best_of: 2 }),
                       (e) => e instanceof OpenAI.BadRequestError && e.param === "best_of");
  check("tool-call conversations replay; bad and unhonoured fields are a 400 naming them in param");

  // json_object: the answer is one JSON object, or it ran out of tokens first ("length").
  const jsonAnswer = await client.chat.completions.create({ ...greedy, messages, max_tokens: 64,
                                                            response_format: { type: "json_object" } });
  const jsonChoice = jsonAnswer.choices[0];
  if (jsonChoice.finish_reason === "stop") {
    const value = JSON.parse(jsonChoice.message.content);
    assert.ok(value !== null && typeof value === "object" && !Array.isArray(value), jsonChoice.message.content);
  } else {
    assert.equal(jsonChoice.finish_reason, "length");
  }
  check("response_format json_object: an object or finish_reason length");

  // chat.completions.parse with zodResponseFormat: the helper sends the zod schema as a strict json_schema
  // (integer with the safe-integer bounds, maxLength, maxItems, enum, additionalProperties false) and parses
  // the reply with zod; it throws LengthFinishReasonError when the reply ran out of tokens.
  const Verse = z.object({ book: z.string().max(16), chapter: z.number().int(), verses: z.array(z.string().max(24)).max(2),
                           mood: z.enum(["joy", "wrath"]) });
  let parsedCount = 0;
  for (const [seed, temperature] of [[1, 0], [2, 1], [3, 1]]) {
    const request = { model: "m", messages: [{ role: "user", content: "Give a verse as JSON." }], seed, temperature,
                      max_tokens: 300, response_format: zodResponseFormat(Verse, "verse") };
    try {
      const parsedAnswer = await client.chat.completions.parse(request);
      const parsedChoice = parsedAnswer.choices[0];
      assert.equal(parsedChoice.finish_reason, "stop");
      assert.deepEqual(parsedChoice.message.parsed, Verse.parse(JSON.parse(parsedChoice.message.content)));
      parsedCount++;
    } catch (e) {
      if (!(e instanceof LengthFinishReasonError)) throw e;
    }
  }
  console.log(`  ${parsedCount} of 3 parsed, the others finish_reason length`);
  check("chat.completions.parse with zodResponseFormat: message.parsed passes the zod schema, or finish_reason length");

  // n choices: choice i is the request alone with seed + i; streamed chunks carry their index.
  const seeded = { model: "m", temperature: 0.9, seed: 77, max_tokens: 10 };
  const two = await client.completions.create({ ...seeded, prompt: "And God said", n: 2 });
  assert.equal(two.choices.length, 2);
  let twoTokens = 0;
  for (let i = 0; i < 2; i++) {
    const one = await client.completions.create({ ...seeded, prompt: "And God said", seed: 77 + i });
    assert.equal(two.choices[i].index, i);
    assert.equal(two.choices[i].text, one.choices[0].text, `choice ${i} vs seed ${77 + i} alone`);
    twoTokens += one.usage.completion_tokens;
  }
  assert.equal(two.usage.completion_tokens, twoTokens);
  const chatTwo = await client.chat.completions.create({ ...seeded, messages, n: 2 });
  const chatTexts = ["", ""];
  for await (const chunk of await client.chat.completions.create({ ...seeded, messages, n: 2, stream: true }))
    for (const choice of chunk.choices) chatTexts[choice.index] += choice.delta?.content ?? "";
  for (let i = 0; i < 2; i++) assert.equal(chatTexts[i], chatTwo.choices[i].message.content);
  check("n: 2, whole and streamed, each choice the request alone with seed + i");

  // lm-eval's loglikelihood request: the prompt's tokens and log-probabilities, nothing generated.
  const ll = await client.completions.create({ model: "m", prompt: "And God said", echo: true, logprobs: 1,
                                               max_tokens: 0 });
  assert.equal(ll.choices[0].text, "And God said");
  const lp = ll.choices[0].logprobs;
  assert.equal(lp.tokens.length, ll.usage.prompt_tokens);
  assert.equal(lp.token_logprobs[0], null);
  assert.ok(lp.token_logprobs.slice(1).every((x) => x <= 0));
  assert.equal(ll.usage.completion_tokens, 0);
  check("echo with logprobs and max_tokens 0");

  // 16 clients at once: every greedy answer is the single client's, every seeded one the same
  // request's alone, and none is an error.
  const prompts = ["And God said", "In the beginning", "The LORD is my shepherd", "Blessed are"];
  const requests = [];
  for (let i = 0; i < 16; i++) {
    const seeded = i % 2 === 1;
    requests.push({ model: "m", prompt: prompts[i % 4], max_tokens: 16 + i,
                    ...(seeded ? { temperature: 0.9, seed: 1000 + i } : { temperature: 0 }),
                    stream: i % 4 >= 2 });
  }
  const run = async (req) => {
    if (!req.stream) return (await client.completions.create(req)).choices[0].text;
    let text = "";
    for await (const chunk of await client.completions.create(req)) text += chunk.choices[0]?.text ?? "";
    return text;
  };
  const alone = [];
  for (const req of requests) alone.push(await run(req));
  const together = await Promise.all(requests.map(run));
  for (let i = 0; i < 16; i++) assert.equal(together[i], alone[i], `request ${i} among 15 others vs alone`);
  check("16 concurrent clients: greedy and seeded answers equal the single client's");

  // Embeddings: the client asks for base64 unless told (and decodes it); float must be the same numbers.
  const n_embd = models.data[0].meta.n_embd;
  assert.ok(n_embd > 0, "/v1/models names n_embd");
  const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  const one = await client.embeddings.create({ model: "text-embedding-3-small", input: "And God said" });
  assert.equal(one.object, "list");
  assert.equal(one.model, "kjv-q8_0.gguf");
  assert.equal(one.data.length, 1);
  assert.equal(one.data[0].object, "embedding");
  assert.equal(one.data[0].embedding.length, n_embd);
  assert.ok(Math.abs(norm(one.data[0].embedding) - 1) < 1e-5, `norm ${norm(one.data[0].embedding)}`);
  assert.ok(one.usage.prompt_tokens > 0 && one.usage.total_tokens === one.usage.prompt_tokens);
  const texts = ["In the beginning", "God created the heaven and the earth", "And God said"];
  const list = await client.embeddings.create({ model: "m", input: texts });
  assert.deepEqual(list.data.map((d) => d.index), [0, 1, 2]);
  for (const d of list.data) {
    assert.equal(d.embedding.length, n_embd);
    assert.ok(Math.abs(norm(d.embedding) - 1) < 1e-5);
  }
  assert.notDeepEqual(list.data[0].embedding, list.data[1].embedding);
  assert.notDeepEqual(list.data[1].embedding, list.data[2].embedding);
  assert.deepEqual(Array.from(list.data[2].embedding), Array.from(one.data[0].embedding), "a list entry is the input alone");
  const floats = await client.embeddings.create({ model: "m", input: texts, encoding_format: "float" });
  for (let i = 0; i < texts.length; i++)
    assert.deepEqual(Array.from(floats.data[i].embedding), Array.from(list.data[i].embedding), `base64 vs float ${i}`);
  await assert.rejects(client.embeddings.create({ model: "m", input: "x", dimensions: 8 }),
                       (e) => e instanceof OpenAI.BadRequestError && e.param === "dimensions");
  check("embeddings.create: a string and a list, base64 (the default) equal to float, unit norms, distinct vectors");

  // A tool loop: tools -> tool_calls -> a role "tool" message -> an answer; then the same call streamed
  // and assembled by the client (stream.finalChatCompletion, what runTools builds on).
  const tools = [{ type: "function", function: { name: "get_weather", description: "The weather of a city",
    parameters: { type: "object", properties: { city: { type: "string", maxLength: 8 } }, required: ["city"],
                  additionalProperties: false } } }];
  const asked = [{ role: "user", content: "The weather in Sion?" }];
  const called = await client.chat.completions.create({ model: "m", messages: asked, tools, tool_choice: "required",
                                                        parallel_tool_calls: false, temperature: 0, max_tokens: 200 });
  const callChoice = called.choices[0];
  assert.equal(callChoice.finish_reason, "tool_calls");
  assert.equal(callChoice.message.content, null);
  const call = callChoice.message.tool_calls[0];
  assert.equal(call.type, "function");
  assert.equal(call.function.name, "get_weather");
  const args = JSON.parse(call.function.arguments);
  assert.deepEqual(Object.keys(args), ["city"]);
  assert.equal(typeof args.city, "string");
  const replied = [...asked, callChoice.message, { role: "tool", tool_call_id: call.id, content: "rain" }];
  const toolAnswer = await client.chat.completions.create({ model: "m", messages: replied, tools, temperature: 0,
                                                        max_tokens: 16 });
  assert.equal(typeof toolAnswer.choices[0].message.content, "string");
  assert.ok(["stop", "length"].includes(toolAnswer.choices[0].finish_reason), toolAnswer.choices[0].finish_reason);
  check("tool loop: tools -> tool_calls -> role tool -> an answer");
  const toolStream = client.chat.completions.stream({ model: "m", messages: asked, tools, tool_choice: "required",
                                                      parallel_tool_calls: false, temperature: 0, max_tokens: 200 });
  const assembled = await toolStream.finalChatCompletion();
  assert.equal(assembled.choices[0].finish_reason, "tool_calls");
  assert.deepEqual(assembled.choices[0].message.tool_calls.map((c) => c.function),
                   callChoice.message.tool_calls.map((c) => c.function));
  check("a streamed tool call, assembled by stream.finalChatCompletion");

  // The Responses API (stateless): a Response's text is the chat completion of the same conversation;
  // streamed, the client's ResponseStream assembles the events into the same Response; an agent's
  // function call and its output make the second turn; stateful fields are a 400 naming them.
  const asResponse = { model: "m", instructions: "Speak as the scripture.", input: "Who made light?",
                       temperature: 0, max_output_tokens: 40 };
  const response = await client.responses.create(asResponse);
  assert.equal(response.object, "response");
  assert.ok(["completed", "incomplete"].includes(response.status), response.status);
  assert.equal(response.output_text, answer, "the Response's text is the chat completion's");
  assert.equal(response.usage.output_tokens, chat.usage.completion_tokens);
  assert.equal(response.usage.input_tokens, chat.usage.prompt_tokens);
  let deltas = "", lastSequence = -1, lastType = null;
  for await (const event of await client.responses.create({ ...asResponse, stream: true })) {
    assert.equal(event.sequence_number, lastSequence + 1, `event ${event.type} in order`);
    lastSequence = event.sequence_number;
    lastType = event.type;
    if (event.type === "response.output_text.delta") deltas += event.delta;
  }
  assert.equal(deltas, answer);
  assert.ok(["response.completed", "response.incomplete"].includes(lastType), lastType);
  const assembledResponse = await client.responses.stream(asResponse).finalResponse();
  assert.equal(assembledResponse.output_text, answer);
  assert.equal(assembledResponse.status, response.status);
  check("responses.create, whole, streamed and assembled by responses.stream: the chat completion's text");

  const flatTools = [{ type: "function", name: "get_weather", description: "The weather of a city", strict: true,
                       parameters: tools[0].function.parameters }];
  const calling = await client.responses.create({ model: "m", input: "The weather in Sion?", tools: flatTools,
                                                  tool_choice: "required", parallel_tool_calls: false,
                                                  temperature: 0, max_output_tokens: 200 });
  const fc = calling.output.find((item) => item.type === "function_call");
  assert.ok(fc, JSON.stringify(calling.output));
  assert.equal(fc.name, "get_weather");
  assert.deepEqual(JSON.parse(fc.arguments), args, "the call chat made for the same conversation");
  const secondTurn = await client.responses.create({ model: "m", tools: flatTools, temperature: 0, max_output_tokens: 16,
    input: [{ role: "user", content: "The weather in Sion?" }, ...calling.output,
            { type: "function_call_output", call_id: fc.call_id, output: "rain" }] });
  assert.equal(secondTurn.output_text, toolAnswer.choices[0].message.content, "the second turn is chat's");
  check("responses: a function call, and its output as the second turn");

  const shaped = await client.responses.create({ model: "m", input: "Name a city.", temperature: 0, max_output_tokens: 64,
    text: { format: { type: "json_schema", name: "city", strict: true,
                      schema: { type: "object", properties: { city: { type: "string", maxLength: 12 } },
                                required: ["city"], additionalProperties: false } } } });
  if (shaped.status === "completed") assert.equal(typeof JSON.parse(shaped.output_text).city, "string", shaped.output_text);
  else assert.equal(shaped.incomplete_details.reason, "max_output_tokens");
  for (const [field, extra] of [["previous_response_id", { previous_response_id: "resp_1" }], ["store", { store: true }],
                                ["tools[0].type", { tools: [{ type: "web_search" }] }]])
    await assert.rejects(client.responses.create({ model: "m", input: "x", ...extra }),
                         (e) => e instanceof OpenAI.BadRequestError && e.param === field, field);
  check("responses: text.format json_schema kept to; stateful fields and built-in tools are a 400 naming them");

  await assert.rejects(client.completions.create({ model: "m", prompt: "x", max_tokens: "many" }),
                       (e) => e instanceof OpenAI.BadRequestError && /max_tokens/.test(e.message));
  const stranger = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "wrong", maxRetries: 0 });
  await assert.rejects(stranger.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
  check("errors: 400 BadRequestError naming the field, 401 AuthenticationError");
  await stopServer(running);
  running = null;
  check("SIGTERM: exit 0");
} finally {
  if (running) running.server.kill("SIGTERM");
}
console.log(`e2e: ${checks} checks passed`);
