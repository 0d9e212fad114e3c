// The official TypeScript SDK's v2 draft client (`experimental/v2/unstable`) drives one of our
// agents over stdio, through the steps every client takes:
//
//   initialize → session/new → a prompt, and a second prompt sent during its turn (held, then
//   inserted when the turn ends) → the agent's permission request, answered → a prompt
//   cancelled with session/cancel, with a held prompt behind it (answered -32800) →
//   session/status → session/list → session/close (twice: idempotent) → a second agent process
//   on the same store resumes the session with replay from the start → status of an unknown
//   session (-32002).
//
// Every line both ways is checked with the SDK's own zod schemas (./validate.mjs); any
// failed step or invalid line exits non-zero.
//
//   node sdk-client.mjs --store DIR -- AGENT_COMMAND [ARGS...]
//
// The agent command must accept `--store PATH` (both of ours do) and ask one permission per turn.

import * as acp from "@agentclientprotocol/sdk/experimental/v2/unstable";
import { Transcript } from "./validate.mjs";
import { agentFromArgs, allowingClient, check, startAgent as start, step, stepsPassed, untilIdle, withTimeout } from "./harness.mjs";

const target = agentFromArgs("sdk-client.mjs");
const transcript = new Transcript();
const startAgent = () => start(acp.ndJsonStream, target, transcript);

// Permissions answered, and where `session/update` notifications go when no ActiveSession
// routes them (the resume).
const state = { permissions: 0, rawUpdates: null };
const clientApp = () => allowingClient(acp, "interop-sdk-client", state);

async function initialize(ctx) {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    info: { name: "interop-sdk-client", version: "1.0.0" },
    capabilities: {},
  });
  check(init.protocolVersion === acp.PROTOCOL_VERSION, `the agent answered protocol version ${init.protocolVersion}`);
  // `session: {}` is the baseline (new, list, resume, close, prompt, cancel); status is its own.
  const session = init.capabilities?.session;
  check(session != null, "the agent advertises sessions");
  check(session.status != null, "the agent advertises session/status");
  return init;
}

const userMessages = (updates) => updates.filter((u) => u.sessionUpdate === "user_message").map((u) => u.messageId);
const agentText = (updates) =>
  updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text")
    .map((u) => u.content.text)
    .join("");

async function firstConnection() {
  const agent = startAgent();
  let sessionId;
  await clientApp().connectWith(agent.stream, async (ctx) => {
    const init = await initialize(ctx);
    step(`initialize: ${init.info.name} ${init.info.version}, protocol ${init.protocolVersion}`);

    const session = await ctx.buildSession(process.cwd()).start();
    sessionId = session.sessionId;
    step(`session/new: ${sessionId}`);

    // A prompt, and a second one while its turn runs: held, inserted when the turn ends.
    const first = session.prompt("first question");
    let second;
    const turn1 = await untilIdle(session, (u) => {
      if (!second && u.sessionUpdate === "state_update" && u.state === "running") second = session.prompt("second question");
    });
    const firstId = (await first).messageId;
    check(second !== undefined, "the second prompt was sent during the first turn");
    check(userMessages(turn1.updates).includes(firstId), "the first prompt's user_message carries its receipt's id");
    check(turn1.stopReason === "end_turn", `the first turn ended ${turn1.stopReason}`);
    const turn2 = await untilIdle(session);
    const secondId = (await second).messageId;
    check(secondId !== firstId, "the held prompt got its own id");
    check(userMessages(turn2.updates).includes(secondId), "the held prompt was inserted when the first turn ended");
    check(turn2.stopReason === "end_turn", `the second turn ended ${turn2.stopReason}`);
    check(agentText(turn1.updates).length > 0 && agentText(turn2.updates).length > 0, "both turns streamed agent text");
    step(`prompt ${firstId}, then a held prompt ${secondId} inserted after the first turn; both ended end_turn`);
    check(state.permissions >= 2, `the agent asked permission in each turn (asked ${state.permissions})`);
    step(`session/request_permission answered ${state.permissions} time(s)`);

    // A prompt cancelled mid-turn, with a held prompt behind it.
    const third = session.prompt("third question, to be cancelled");
    let held;
    let heldOutcome;
    const turn3 = await untilIdle(session, (u) => {
      if (!held && u.sessionUpdate === "agent_message_chunk") {
        held = session.prompt("held, then cancelled with the turn");
        heldOutcome = held.then(
          (r) => ({ answered: r }),
          (e) => ({ error: e }),
        );
        // Sent after the held prompt, so the agent has it when it cancels.
        setTimeout(() => ctx.notify(acp.methods.agent.session.cancel, { sessionId }), 10);
      }
    });
    await third;
    check(turn3.stopReason === "cancelled", `the cancelled turn ended ${turn3.stopReason}`);
    const outcome = await withTimeout(heldOutcome, 5000, "the held prompt's answer");
    check(outcome.error?.code === -32800, `the held prompt was answered ${JSON.stringify(outcome.answered ?? outcome.error?.code ?? outcome.error)}`);
    step("session/cancel: the turn ended cancelled and the held prompt was answered -32800");

    const status = await ctx.request(acp.methods.agent.session.status, { sessionId });
    check(status.status === "open", `session/status answered ${status.status}`);
    check(status.state?.state === "idle", `session/status state ${JSON.stringify(status.state)}`);
    step(`session/status: ${status.status}, ${status.state.state}`);

    const list = await ctx.request(acp.methods.agent.session.list, {});
    check(list.sessions.some((s) => s.sessionId === sessionId), "session/list includes the session");
    step(`session/list: ${list.sessions.length} session(s)`);

    session.dispose();
    await ctx.request(acp.methods.agent.session.close, { sessionId });
    await ctx.request(acp.methods.agent.session.close, { sessionId });
    step("session/close, twice (idempotent)");
  });
  agent.child.stdin.end();
  await withTimeout(agent.exited, 10000, "the agent to exit after its input closed");
  return sessionId;
}

async function secondConnection(sessionId) {
  const agent = startAgent();
  await clientApp().connectWith(agent.stream, async (ctx) => {
    await initialize(ctx);
    // The agent sends the replay and then the state snapshot before its answer; the SDK hands
    // updates to handlers with no fixed order relative to a response, so wait for the snapshot.
    const replayed = [];
    let snapshotSeen;
    const snapshot = new Promise((resolve) => {
      snapshotSeen = resolve;
    });
    state.rawUpdates = (n) => {
      if (n.sessionId !== sessionId) return;
      replayed.push(n.update);
      if (n.update.sessionUpdate === "state_update") snapshotSeen();
    };
    const resumed = await ctx.request(acp.methods.agent.session.resume, {
      sessionId,
      cwd: process.cwd(),
      replayFrom: { type: "start" },
    });
    check(resumed !== undefined, "session/resume answered");
    await withTimeout(snapshot, 5000, "the state snapshot after the replay");
    const users = replayed.filter((u) => u.sessionUpdate === "user_message").length;
    check(users >= 3, `the replay carried the user messages (${users})`);
    const last = replayed[replayed.length - 1];
    check(last?.sessionUpdate === "state_update" && last.state === "idle", `the replay ends with the idle snapshot (${JSON.stringify(last)})`);
    step(`session/resume with replay: ${replayed.length} update(s), ${users} user message(s), then the idle snapshot`);

    const status = await ctx.request(acp.methods.agent.session.status, { sessionId });
    check(status.status === "open", `status after resume: ${status.status}`);
    await ctx.request(acp.methods.agent.session.close, { sessionId });
    try {
      await ctx.request(acp.methods.agent.session.status, { sessionId: "no-such-session" });
      check(false, "session/status of an unknown session succeeded");
    } catch (e) {
      check(e.code === -32002, `session/status of an unknown session: ${e.code}`);
    }
    step("session/status of an unknown session: -32002");
  });
  agent.child.stdin.end();
  await withTimeout(agent.exited, 10000, "the agent to exit after its input closed");
}

try {
  console.log(`sdk-client: the official TypeScript SDK (v2 draft, unstable) drives: ${target.command.join(" ")}`);
  const sessionId = await firstConnection();
  await secondConnection(sessionId);
} catch (e) {
  console.error(`sdk-client: FAILED: ${e.stack ?? e}`);
  for (const p of transcript.problems) console.error(`  invalid: ${p}`);
  console.log(transcript.summary());
  process.exit(1);
}
console.log(transcript.summary());
for (const p of transcript.problems) console.error(`  invalid: ${p}`);
if (transcript.problems.length > 0) process.exit(1);
console.log(`sdk-client: passed, ${stepsPassed()} steps`);
