// An ACP v1 agent written with the official TypeScript SDK's v1 API (the package's default
// entrypoint, what shipping agents build on), over stdio, for our clients to drive. Its "model"
// is scripted: each turn streams "you said: <prompt>" as three `agent_message_chunk`s (no
// messageId), runs one tool call that asks permission first (v1's shape, `toolCall`), sends one
// more chunk and answers the prompt `{stopReason: "end_turn"}`. `session/cancel` ends the turn
// (the prompt is answered `cancelled`, an open permission request is withdrawn with
// `$/cancel_request`). A prompt sent while a turn runs is answered -32600 "a turn is already
// running" and counted as a problem: v1 has no held prompts, and our clients must not send one.
// `session/load` replays the history (prompts as `user_message_chunk`s, replies as
// `agent_message_chunk`s) before its answer; list and close too. Sessions live in this
// process only.
//
//   node sdk-v1-agent.mjs [--delay-ms N] [--report FILE]
//
// With --report, every line both ways is checked with the SDK's own v1 zod schemas
// (./validate.mjs, `Transcript(1)`) and the result is written to FILE as JSON when the input
// ends, with what the agent saw: the prompts in order (their text), overlapping prompts, cancels.

import { renameSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { Transcript, tappedStream } from "./validate.mjs";

const option = (name) => {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
};
const delayMs = Number(option("--delay-ms") ?? 30);
const reportTo = option("--report");

const transcript = new Transcript(1);
// What the agent saw, for the report.
const seen = { requestedVersions: [], promptTexts: [], overlappingPrompts: 0, cancels: 0, cancelledTurns: 0, loads: 0 };
// What the agent did not expect of a client (not lines the schemas refuse): overlapping prompts.
const problems = [];

/** sessionId → { cwd, open, history: [{role: "user", blocks} | {role: "agent", texts}], turn: {abort, done} | null } */
const sessions = new Map();
let nextId = 0;
const mint = (prefix) => `${prefix}_${++nextId}`;

/** Waits `ms`; false when `signal` aborts first. */
const sleep = (ms, signal) =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => resolve(true), ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve(false);
      },
      { once: true },
    );
  });

function textOf(prompt) {
  return prompt
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("\n");
}

/** One turn on `prompt`; resolves to its stop reason. */
async function turn(client, sessionId, session, prompt, abort) {
  const update = (u) => client.notify(acp.methods.client.session.update, { sessionId, update: u });
  const reply = { role: "agent", texts: [] };
  session.history.push({ role: "user", blocks: prompt }, reply);
  const say = async (text) => {
    reply.texts.push(text);
    await update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
  };
  const text = textOf(prompt);
  const half = Math.ceil(text.length / 2);
  const pieces = ["you said: ", text.slice(0, half), text.slice(half)];
  for (const [i, piece] of pieces.entries()) {
    if (i > 0 && !(await sleep(delayMs, abort.signal))) return "cancelled";
    await say(piece);
  }
  if (!(await sleep(delayMs, abort.signal))) return "cancelled";
  const toolCallId = mint("call");
  await update({ sessionUpdate: "tool_call", toolCallId, title: "Run the tests", kind: "execute", status: "pending" });
  // Withdrawn ($/cancel_request) when the turn is cancelled; the client's late answer, if any,
  // is dropped by the SDK.
  const answer = await client
    .request(
      acp.methods.client.session.requestPermission,
      {
        sessionId,
        toolCall: { toolCallId, title: "Run the tests", kind: "execute", status: "pending" },
        options: [
          { optionId: "allow", name: "Allow", kind: "allow_once" },
          { optionId: "reject", name: "Reject", kind: "reject_once" },
        ],
      },
      { cancellationSignal: abort.signal, stopWaitingOnCancel: true },
    )
    .catch(() => ({ outcome: { outcome: "cancelled" } }));
  const allowed = answer.outcome.outcome === "selected" && answer.outcome.optionId === "allow";
  await update({ sessionUpdate: "tool_call_update", toolCallId, status: allowed ? "completed" : "failed" });
  if (abort.signal.aborted || answer.outcome.outcome === "cancelled") return "cancelled";
  if (!(await sleep(delayMs, abort.signal))) return "cancelled";
  await say(allowed ? " (the tests ran)" : " (the tests were not run)");
  return "end_turn";
}

const app = acp
  .agent({ name: "interop-sdk-v1-agent" })
  // v1 whatever the client asked: the SDK parses the request with v1's schema, which drops
  // members it does not know (a v2 client's `info` and `capabilities`).
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    seen.requestedVersions.push(params.protocolVersion);
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { loadSession: true, sessionCapabilities: { list: {}, close: {} } },
      agentInfo: { name: "interop-sdk-v1-agent", version: "2.4.0" },
      authMethods: [],
    };
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    const sessionId = mint("sess");
    sessions.set(sessionId, { cwd: params.cwd, open: true, history: [], turn: null });
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.load, async ({ params, client }) => {
    const session = sessions.get(params.sessionId);
    if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
    seen.loads += 1;
    // The history first, then the answer.
    for (const entry of session.history) {
      if (entry.role === "user") {
        for (const content of entry.blocks) {
          await client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update: { sessionUpdate: "user_message_chunk", content } });
        }
      } else {
        for (const text of entry.texts) {
          await client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } });
        }
      }
    }
    session.open = true;
    session.cwd = params.cwd;
    return {};
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client, signal }) => {
    const session = sessions.get(params.sessionId);
    if (!session?.open) throw acp.RequestError.sessionNotFound(params.sessionId);
    if (session.turn) {
      seen.overlappingPrompts += 1;
      problems.push(`a prompt arrived while a turn was running in ${params.sessionId}: ${JSON.stringify(textOf(params.prompt))}`);
      throw new acp.RequestError(-32600, "a turn is already running");
    }
    seen.promptTexts.push(textOf(params.prompt));
    const abort = new AbortController();
    // `$/cancel_request` for the prompt (or the connection closing) cancels the turn too.
    signal.addEventListener("abort", () => abort.abort(), { once: true });
    session.turn = { abort };
    session.turn.done = turn(client, params.sessionId, session, params.prompt, abort).finally(() => {
      session.turn = null;
    });
    const stopReason = await session.turn.done;
    if (stopReason === "cancelled") seen.cancelledTurns += 1;
    return { stopReason };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    seen.cancels += 1;
    sessions.get(params.sessionId)?.turn?.abort.abort();
  })
  .onRequest(acp.methods.agent.session.list, ({ params }) => ({
    sessions: [...sessions].filter(([, s]) => !params.cwd || s.cwd === params.cwd).map(([sessionId, s]) => ({ sessionId, cwd: s.cwd })),
  }))
  // Closing ends the running turn and the session's activity; its history stays loadable.
  .onRequest(acp.methods.agent.session.close, async ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (!session) return {};
    session.turn?.abort.abort();
    await session.turn?.done;
    session.open = false;
    return {};
  });

const stream = tappedStream(acp.ndJsonStream, Readable.toWeb(process.stdin), Writable.toWeb(process.stdout), transcript, "agent", "client");
const connection = app.connect(stream);
await connection.closed;
if (reportTo) {
  const summary =
    `${transcript.summary()}, prompts: ${seen.promptTexts.length}, overlapping prompts: ${seen.overlappingPrompts}, ` +
    `cancels: ${seen.cancels} (turns cancelled: ${seen.cancelledTurns})`;
  // Written whole under another name, then renamed: a reader never sees half of it.
  const report = {
    summary,
    lines: transcript.lines,
    valid: transcript.valid,
    problems: [...transcript.problems, ...problems],
    prompts: seen.promptTexts.length,
    ...seen,
  };
  writeFileSync(`${reportTo}.partial`, JSON.stringify(report, null, 1));
  renameSync(`${reportTo}.partial`, reportTo);
}
process.exit(0);
