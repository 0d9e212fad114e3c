// An ACP v2 agent written with the official TypeScript SDK's API (`experimental/v2/unstable`),
// over stdio, for our clients to drive. Its "model" is scripted: each turn echoes the prompt,
// streams a few chunks, runs one tool call that asks permission first, and ends `end_turn`.
// It implements the v2 draft's session surface as the SDK documents it: the prompt receipt on
// insertion, prompts sent during a turn held and inserted when it ends (in order), cancel
// (the turn ends `cancelled`, held prompts are answered -32800), status, list, resume (no
// replay: the sessions live in this process only) and idempotent close. No session/inject: our
// clients must work without it.
//
//   node sdk-agent.mjs [--delay-ms N] [--report FILE] [--listen HOST:PORT] [--require-auth]
//
// With --require-auth, it advertises one auth method (`api-key`, type `agent`) and answers
// every session method -32000 (Authentication required) until `auth/login` with it succeeded;
// then it notifies `_interop/auth_status` `{state: "authenticated"}` (an extension notification
// for the client's stream). It always serves the extension request `_interop/echo`, answered
// `{echo: params}`, and `auth/logout`.
//
// With --report, every line both ways is checked with the SDK's own zod schemas
// (./validate.mjs) and the result is written to FILE as JSON when the input ends. With
// --listen, it serves over the network instead (the SDK's AcpServer: Streamable HTTP and
// WebSocket on one endpoint), prints the endpoint's URL and serves until SIGTERM.

import { renameSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/experimental/v2/unstable";
import { Transcript, tappedMessages, tappedStream } from "./validate.mjs";

const option = (name) => {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
};
const delayMs = Number(option("--delay-ms") ?? 30);
const reportTo = option("--report");
const requireAuth = process.argv.includes("--require-auth");
let authenticated = false;
const API_KEY = { type: "agent", methodId: "api-key", name: "API key", description: "An API key the agent already has." };

/** -32000 until the client authenticated, when --require-auth asks for it. */
function checkAuth() {
  if (requireAuth && !authenticated) throw acp.RequestError.authRequired();
}

const transcript = new Transcript();

/** sessionId → { cwd, turn: {abort, done} | null, held: [{prompt, resolve, reject}], title } */
const sessions = new Map();
let nextId = 0;
const mint = (prefix) => `${prefix}_${++nextId}`;

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(() => resolve(true), ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve(false);
    });
  });

function notFound(sessionId) {
  return new acp.RequestError(-32002, "Resource not found", { sessionId });
}

function textOf(prompt) {
  return prompt
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join(" ");
}

/** Inserts `prompt` into the session (user_message) and runs a turn on it; returns its id. */
function insert(client, sessionId, prompt) {
  const session = sessions.get(sessionId);
  const messageId = mint("msg");
  const abort = new AbortController();
  const update = (u) => client.notify(acp.methods.client.session.update, { sessionId, update: u });
  session.turn = { abort };
  session.turn.done = (async () => {
    await update({ sessionUpdate: "user_message", messageId, content: prompt });
    await update({ sessionUpdate: "state_update", state: "running" });
    const reply = mint("agent");
    const say = (text) => update({ sessionUpdate: "agent_message_chunk", messageId: reply, content: { type: "text", text } });
    let stopReason = "end_turn";
    try {
      await say(`Heard: ${textOf(prompt)}. `);
      for (const step of [1, 2]) {
        if (!(await sleep(delayMs, abort.signal))) throw abort;
        await say(`step ${step}. `);
      }
      const toolCallId = mint("call");
      await update({ sessionUpdate: "tool_call_update", toolCallId, title: "Run the tests", kind: "execute", status: "pending" });
      const answer = await client.request(
        acp.methods.client.session.requestPermission,
        {
          sessionId,
          title: "Run the tests?",
          subject: { type: "tool_call", toolCall: { toolCallId } },
          options: [
            { optionId: "allow", name: "Allow", kind: "allow_once" },
            { optionId: "reject", name: "Reject", kind: "reject_once" },
          ],
        },
        { cancellationSignal: abort.signal },
      ).catch(() => ({ outcome: { outcome: "cancelled" } }));
      const allowed = answer.outcome.outcome === "selected" && answer.outcome.optionId === "allow";
      await update({ sessionUpdate: "tool_call_update", toolCallId, status: allowed ? "completed" : "failed" });
      if (abort.signal.aborted || !(await sleep(delayMs, abort.signal))) throw abort;
      await say("done.");
    } catch (e) {
      if (e !== abort) throw e;
      stopReason = "cancelled";
    }
    session.turn = null;
    await update({ sessionUpdate: "state_update", state: "idle", stopReason });
    // The next held prompt, in arrival order, opens the next turn.
    const next = session.held.shift();
    if (next) next.resolve({ messageId: insert(client, sessionId, next.prompt) });
  })();
  return messageId;
}

const app = acp
  .agent({ name: "interop-sdk-agent" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => ({
    protocolVersion: Math.min(params.protocolVersion, acp.PROTOCOL_VERSION),
    info: { name: "interop-sdk-agent", version: "2.4.0" },
    capabilities: { session: { status: {} } },
    ...(requireAuth ? { authMethods: [API_KEY] } : {}),
  }))
  .onRequest(acp.methods.agent.auth.login, async ({ params, client }) => {
    if (params.methodId !== API_KEY.methodId) throw acp.RequestError.invalidParams(undefined, `no auth method ${params.methodId}`);
    authenticated = true;
    await client.notify("_interop/auth_status", { state: "authenticated" });
    return {};
  })
  .onRequest(acp.methods.agent.auth.logout, () => {
    authenticated = false;
    return {};
  })
  .onRequest("_interop/echo", (params) => params, ({ params }) => ({ echo: params ?? null }))
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    checkAuth();
    const sessionId = mint("sess");
    sessions.set(sessionId, { cwd: params.cwd, turn: null, held: [] });
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.prompt, ({ params, client, signal }) => {
    checkAuth();
    const session = sessions.get(params.sessionId);
    if (!session) throw notFound(params.sessionId);
    if (!session.turn) return { messageId: insert(client, params.sessionId, params.prompt) };
    // Held until the running turn ends; withdrawn when the client cancels the request.
    return new Promise((resolve, reject) => {
      const held = { prompt: params.prompt, resolve, reject };
      session.held.push(held);
      signal.addEventListener("abort", () => {
        session.held = session.held.filter((h) => h !== held);
        reject(acp.RequestError.requestCancelled());
      });
    });
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (!session) return;
    for (const held of session.held.splice(0)) held.reject(acp.RequestError.requestCancelled());
    session.turn?.abort.abort();
  })
  .onRequest(acp.methods.agent.session.status, ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (!session) throw notFound(params.sessionId);
    return { status: "open", state: session.turn ? { state: "running" } : { state: "idle" } };
  })
  .onRequest(acp.methods.agent.session.list, () => (checkAuth(), {
    sessions: [...sessions].map(([sessionId, s]) => ({ sessionId, cwd: s.cwd })),
  }))
  .onRequest(acp.methods.agent.session.resume, ({ params }) => {
    checkAuth();
    if (!sessions.has(params.sessionId)) throw notFound(params.sessionId);
    return {};
  })
  .onRequest(acp.methods.agent.session.close, async ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (!session) return {};
    for (const held of session.held.splice(0)) held.reject(acp.RequestError.requestCancelled());
    session.turn?.abort.abort();
    await session.turn?.done;
    sessions.delete(params.sessionId);
    return {};
  });

/** Writes the report (whole under another name, then renamed: a reader never sees half of it). */
function writeReport(transcripts) {
  if (!reportTo) return;
  const sum = (k) => transcripts.reduce((n, t) => n + t[k], 0);
  const problems = transcripts.flatMap((t) => t.problems);
  const summary =
    transcripts.length === 1 ? transcripts[0].summary() : `connections: ${transcripts.length}; ${transcripts.map((t) => t.summary()).join("; ")}`;
  const report = { summary, lines: sum("lines"), valid: sum("valid"), problems };
  writeFileSync(`${reportTo}.partial`, JSON.stringify(report, null, 1));
  renameSync(`${reportTo}.partial`, reportTo);
}

const listenAt = option("--listen");
if (listenAt === undefined) {
  const stream = tappedStream(acp.ndJsonStream, Readable.toWeb(process.stdin), Writable.toWeb(process.stdout), transcript, "agent", "client");
  const connection = app.connect(stream);
  await connection.closed;
  writeReport([transcript]);
  process.exit(0);
}

// Over the network: the SDK's AcpServer (Streamable HTTP and WebSocket) on Node's http server,
// every connection's messages checked on a transcript of its own (request ids are per
// connection). Prints the endpoint's URL; serves until SIGTERM, then writes the report.
const { createServer } = await import("node:http");
const { WebSocketServer } = await import("ws");
const { AcpServer } = await import("@agentclientprotocol/sdk/experimental/server");
const { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } = await import("@agentclientprotocol/sdk/experimental/node");
const transcripts = [];
// When a client goes away mid-request, the SDK's connection (2.4.0) can reject a promise
// nobody awaits ("ACP connection closed"), which would end this process: it is logged, and
// the server goes on serving the other clients.
process.on("unhandledRejection", (e) => {
  console.error(`sdk-agent: the SDK left a rejected promise unawaited (kept serving): ${e?.message ?? e}`);
});
const server = new AcpServer({
  agent: {
    connect(stream, options) {
      const t = new Transcript();
      transcripts.push(t);
      return app.connect(tappedMessages(stream, t, "agent", "client"), options);
    },
  },
});
const http = createServer(createNodeHttpHandler(server));
http.on("upgrade", createNodeWebSocketUpgradeHandler(server, new WebSocketServer({ noServer: true })));
const [host, port] = [listenAt.slice(0, listenAt.lastIndexOf(":")), Number(listenAt.slice(listenAt.lastIndexOf(":") + 1))];
http.listen(port, host, () => {
  const { address, port } = http.address();
  console.log(`http://${address}:${port}/acp`);
});
process.on("SIGTERM", async () => {
  await server.close();
  http.close();
  writeReport(transcripts);
  process.exit(0);
});
