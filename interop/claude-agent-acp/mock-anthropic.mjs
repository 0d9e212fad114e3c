// A mock of the Anthropic Messages API for running claude-agent-acp offline, on 127.0.0.1 only.
//
//   node mock-anthropic.mjs [--log FILE] [--delay-ms N]
//
// POST /v1/messages answers every request with a scripted reply that quotes the text of the
// conversation's user turns (so a test sees which input reached the model): streamed as
// server-sent events when the request asks for `stream` (`message_start`, `content_block_start`,
// one `content_block_delta` per word with N ms between them, `content_block_stop`,
// `message_delta` with `stop_reason: end_turn` and usage, `message_stop`), else one JSON message.
// POST /v1/messages/count_tokens answers a fixed count. Every request is appended to the log as
// one JSON line `{method, path, body}`; anything else is answered 404 and logged too. Once it
// listens it prints its base URL (`http://127.0.0.1:PORT`) as the first line of stdout. No
// dependency beyond Node.

import { createServer } from "node:http";
import { appendFileSync } from "node:fs";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const log = option("--log");
const delayMs = Number(option("--delay-ms", "150"));

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function record(entry) {
  if (log) appendFileSync(log, JSON.stringify(entry) + "\n");
}

// The text a user turn carries for the model: its last text block that is not a reminder the
// agent added (`<system-reminder>…`).
function said(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const texts = content.filter((b) => b && b.type === "text" && typeof b.text === "string").map((b) => b.text);
  const own = texts.filter((t) => !t.trimStart().startsWith("<system-reminder>"));
  return (own[own.length - 1] ?? "").replace(/\s+/g, " ").trim();
}

// What the model "says": the last user turn it was given, quoted, with some words around it
// so that a reply takes a while to stream.
function reply(body) {
  const users = (body.messages ?? []).filter((m) => m.role === "user").map((m) => said(m.content));
  const last = users[users.length - 1] ?? "";
  return `Working on it. You said: ${last || "nothing"}. Thinking it through step by step, then done.`;
}

function usage(text) {
  return { input_tokens: 12, output_tokens: text.split(" ").length, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
}

async function stream(res, body) {
  const text = reply(body);
  const id = `msg_mock_${Date.now()}`;
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  const send = (event, data) => res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
  send("message_start", {
    message: { id, type: "message", role: "assistant", model: body.model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage(""), output_tokens: 1 } },
  });
  send("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
  const words = text.split(" ");
  for (let i = 0; i < words.length; i++) {
    if (res.destroyed) return;
    await sleep(delayMs);
    send("content_block_delta", { index: 0, delta: { type: "text_delta", text: (i === 0 ? "" : " ") + words[i] } });
  }
  send("content_block_stop", { index: 0 });
  send("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: words.length } });
  send("message_stop", {});
  res.end();
}

const server = createServer((req, res) => {
  let chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", async () => {
    const raw = Buffer.concat(chunks).toString("utf8");
    let body = {};
    try {
      body = raw ? JSON.parse(raw) : {};
    } catch {
      body = { unparsed: raw.slice(0, 200) };
    }
    const path = (req.url ?? "").split("?")[0];
    record({ method: req.method, path, body });
    try {
      if (req.method === "POST" && path === "/v1/messages/count_tokens") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ input_tokens: 12 }));
      } else if (req.method === "POST" && path === "/v1/messages") {
        if (body.stream) {
          await stream(res, body);
        } else {
          const text = reply(body);
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({
            id: `msg_mock_${Date.now()}`, type: "message", role: "assistant", model: body.model,
            content: [{ type: "text", text }], stop_reason: "end_turn", stop_sequence: null, usage: usage(text),
          }));
        }
      } else {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ type: "error", error: { type: "not_found_error", message: `no mock for ${req.method} ${path}` } }));
      }
    } catch (e) {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    }
  });
});

server.listen(0, "127.0.0.1", () => {
  const { port } = server.address();
  console.log(`http://127.0.0.1:${port}`);
});
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => server.close(() => process.exit(0)));
