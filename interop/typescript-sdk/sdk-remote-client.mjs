// The official TypeScript SDK's v2 draft client drives one of our agents over the network: the
// SDK's Streamable HTTP client (`createHttpStream`) and its WebSocket client
// (`createWebSocketStream`, with the `ws` package's constructor on Node) against an agent
// started with `--listen 127.0.0.1:0`, which prints its endpoint's URL on stdout.
//
// Each profile: initialize → session/new → a prompt whose turn asks permission (answered) and
// ends end_turn → session/status → session/close. Then, over HTTP, a connection that leaves
// mid-turn and a new connection that resumes the session with replay (the turn went on
// without its client). Every message both ways is checked with the SDK's own zod schemas.
//
//   node sdk-remote-client.mjs -- AGENT_COMMAND [ARGS...]
//
// The agent command must accept `--listen HOST:PORT` and `--store PATH` and ask one
// permission per turn.

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import * as acp from "@agentclientprotocol/sdk/experimental/v2/unstable";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { WebSocket } from "ws";
import { Transcript, tappedMessages } from "./validate.mjs";
import { agentFromArgs, allowingClient, check, step, stepsPassed, untilIdle, withTimeout } from "./harness.mjs";

const target = agentFromArgs("sdk-remote-client.mjs");
// Permissions answered, and where `session/update` notifications go when no ActiveSession
// routes them (the resume).
const state = { permissions: 0, rawUpdates: null };
const clientApp = () => allowingClient(acp, "interop-sdk-remote-client", state);

/** Starts the agent listening on a free loopback port; resolves with it and its URL. */
async function startAgent() {
  const [cmd, ...rest] = target.command;
  const child = spawn(cmd, [...rest, "--listen", "127.0.0.1:0", "--store", target.store], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const lines = createInterface({ input: child.stdout });
  const url = await withTimeout(
    new Promise((resolve, reject) => {
      lines.once("line", resolve);
      child.once("exit", (code) => reject(new Error(`the agent exited (${code}) before printing its URL`)));
    }),
    10000,
    "the agent's URL on its stdout",
  );
  check(/^http:\/\/127\.0\.0\.1:\d+\/acp$/.test(url), `the agent printed its endpoint (${url})`);
  return { child, exited, url };
}

const connect = (profile, url, transcript) => {
  const stream =
    profile === "WebSocket" ? createWebSocketStream(url.replace(/^http/, "ws"), { WebSocket }) : createHttpStream(url);
  return tappedMessages(stream, transcript, "client", "agent");
};

async function initialize(ctx) {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    info: { name: "interop-sdk-remote-client", version: "1.0.0" },
    capabilities: {},
  });
  check(init.protocolVersion === acp.PROTOCOL_VERSION, `the agent answered protocol version ${init.protocolVersion}`);
  return init;
}

/** One profile's whole session. */
async function oneSession(profile, url, transcript) {
  const asked = state.permissions;
  await clientApp().connectWith(connect(profile, url, transcript), async (ctx) => {
    const init = await initialize(ctx);
    step(`${profile}: initialize: ${init.info.name}, protocol ${init.protocolVersion}`);
    const session = await ctx.buildSession(process.cwd()).start();
    step(`${profile}: session/new: ${session.sessionId}`);
    const receipt = session.prompt("a question over the network");
    const turn = await untilIdle(session);
    const { messageId } = await receipt;
    check(turn.updates.some((u) => u.sessionUpdate === "user_message" && u.messageId === messageId), "the prompt's user_message carries its receipt's id");
    check(turn.updates.some((u) => u.sessionUpdate === "agent_message_chunk"), "the turn streamed agent text");
    check(turn.stopReason === "end_turn", `the turn ended ${turn.stopReason}`);
    check(state.permissions > asked, "the agent asked permission during the turn, and got the answer");
    step(`${profile}: prompt ${messageId}: ${turn.updates.length} update(s), permission answered, end_turn`);
    const status = await ctx.request(acp.methods.agent.session.status, { sessionId: session.sessionId });
    check(status.status === "open" && status.state?.state === "idle", `session/status: ${JSON.stringify(status)}`);
    session.dispose();
    await ctx.request(acp.methods.agent.session.close, { sessionId: session.sessionId });
    step(`${profile}: session/status open and idle, session/close`);
  });
}

/** A connection that leaves mid-turn, and a new one that resumes the session with replay. */
async function leaveAndResume(url, transcript) {
  let sessionId;
  let messageId;
  await clientApp().connectWith(connect("HTTP", url, transcript), async (ctx) => {
    await initialize(ctx);
    const session = await ctx.buildSession(process.cwd()).start();
    sessionId = session.sessionId;
    ({ messageId } = await session.prompt("asked, then the client goes away"));
    session.dispose();
  });
  step(`HTTP: prompt ${messageId} in ${sessionId}, then the connection ended mid-turn`);
  await clientApp().connectWith(connect("HTTP", url, transcript), async (ctx) => {
    await initialize(ctx);
    const replayed = [];
    let idleSeen;
    const idle = new Promise((resolve) => {
      idleSeen = resolve;
    });
    state.rawUpdates = (n) => {
      if (n.sessionId !== sessionId) return;
      replayed.push(n.update);
      if (n.update.sessionUpdate === "state_update" && n.update.state === "idle") idleSeen();
    };
    await ctx.request(acp.methods.agent.session.resume, { sessionId, cwd: process.cwd(), replayFrom: { type: "start" } });
    // The turn went on without a client; once it ends (no one could answer its permission
    // request, so it was cancelled, or it got past it) the session is idle.
    await withTimeout(idle, 20000, "the session to be idle after the resume");
    check(replayed.some((u) => u.sessionUpdate === "user_message" && u.messageId === messageId), "the replay carries the prompt");
    step(`HTTP: a new connection resumed ${sessionId} with replay (${replayed.length} update(s)) and saw it idle`);
    await ctx.request(acp.methods.agent.session.close, { sessionId });
  });
}

const transcript = new Transcript();
let agent;
try {
  console.log(`sdk-remote-client: the official TypeScript SDK's remote clients drive: ${target.command.join(" ")} --listen`);
  agent = await startAgent();
  step(`the agent listens on ${agent.url}`);
  await oneSession("HTTP", agent.url, transcript);
  await oneSession("WebSocket", agent.url, transcript);
  await leaveAndResume(agent.url, transcript);
  agent.child.kill("SIGTERM");
  const exit = await withTimeout(agent.exited, 10000, "the agent to stop on SIGTERM");
  check(exit.code === 0, `the agent stopped cleanly on SIGTERM (${JSON.stringify(exit)})`);
  step("the agent stopped on SIGTERM");
} catch (e) {
  console.error(`sdk-remote-client: FAILED: ${e.stack ?? e}`);
  agent?.child.kill("SIGKILL");
  for (const p of transcript.problems) console.error(`  invalid: ${p}`);
  console.log(transcript.summary());
  process.exit(1);
}
console.log(transcript.summary());
for (const p of transcript.problems) console.error(`  invalid: ${p}`);
if (transcript.problems.length > 0) process.exit(1);
console.log(`sdk-remote-client: passed, ${stepsPassed()} steps`);
process.exit(0);
