// The official TypeScript SDK's ACP v1 client (the package's default entrypoint, what shipping
// editors build on) drives one of our agents over stdio:
//
//   initialize (version 1) → session/new → a prompt, answered {stopReason: "end_turn"} when its
//   turn ends, with the agent's output as chunks and its permission request (v1's shape, with
//   `toolCall`) answered → a steer sent mid-turn through the steering extension
//   (`_session/steering`), injected into that turn → a prompt cancelled with session/cancel, answered "cancelled" →
//   session/list → session/close → a second agent process on the same store loads the session
//   (session/load: the history replayed as chunks before the answer).
//
// Every line both ways is checked with the SDK's own v1 zod schemas (./validate.mjs); any
// failed step or invalid line exits non-zero.
//
//   node sdk-v1-client.mjs [--store DIR] -- AGENT_COMMAND [ARGS...]
//
// The agent command must accept `--store PATH` and ask one permission per turn.

import * as acp from "@agentclientprotocol/sdk";
import { Transcript } from "./validate.mjs";
import { agentFromArgs, check, startAgent as start, step, stepsPassed, withTimeout } from "./harness.mjs";

const target = agentFromArgs("sdk-v1-client.mjs");
const transcript = new Transcript(1);
const startAgent = () => start(acp.ndJsonStream, target, transcript);

// What the agent sent, in order, and the permission requests it made.
let updates = [];
let onUpdate = () => {};
let permissions = [];

function clientApp() {
  return acp
    .client({ name: "interop-sdk-v1-client" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params.update);
      onUpdate(params.update);
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      permissions.push(params);
      const allow = params.options.find((o) => o.kind === "allow_once" || o.kind === "allow_always") ?? params.options[0];
      return { outcome: { outcome: "selected", optionId: allow.optionId } };
    });
}

async function initialize(ctx) {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "interop-sdk-v1-client", version: "1.0.0" },
  });
  check(acp.PROTOCOL_VERSION === 1, `the SDK's default entrypoint speaks version ${acp.PROTOCOL_VERSION}`);
  check(init.protocolVersion === 1, `the agent answered protocol version ${init.protocolVersion}`);
  return init;
}

const text = (kind) =>
  updates
    .filter((u) => u.sessionUpdate === kind && u.content?.type === "text")
    .map((u) => u.content.text)
    .join("");

async function firstConnection() {
  const agent = startAgent();
  let sessionId;
  await clientApp().connectWith(agent.stream, async (ctx) => {
    const init = await initialize(ctx);
    check(init.agentCapabilities?.loadSession === true, "the agent advertises loadSession");
    step(`initialize: ${init.agentInfo?.name} ${init.agentInfo?.version}, protocol ${init.protocolVersion}, loadSession`);

    const created = await ctx.request(acp.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
    sessionId = created.sessionId;
    step(`session/new: ${sessionId}`);

    updates = [];
    const answer = await withTimeout(
      ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "first question" }] }),
      30000,
      "the prompt's answer",
    );
    check(answer.stopReason === "end_turn", `the prompt ended ${answer.stopReason}`);
    check(text("agent_message_chunk").length > 0, "the agent's reply arrived as agent_message_chunk");
    check(!updates.some((u) => u.sessionUpdate === "user_message_chunk"), "the client's own prompt is not echoed");
    step(`session/prompt: {stopReason: end_turn} after ${updates.length} updates ("${text("agent_message_chunk").slice(0, 40)}…")`);
    check(permissions.length >= 1, "the agent asked for permission during the turn");
    check(typeof permissions[0].toolCall?.toolCallId === "string", "the permission request carries v1's toolCall");
    const announced = updates.filter((u) => u.sessionUpdate === "tool_call").map((u) => u.toolCallId);
    check(
      announced.includes(permissions[0].toolCall.toolCallId),
      `the permission's toolCall is a tool call the turn announced (${permissions[0].toolCall.toolCallId} among ${announced.join(", ")})`,
    );
    step(`session/request_permission: ${permissions.length} answered, toolCall ${permissions[0].toolCall.toolCallId}`);

    // The steering extension (spec/rules.md R-STEERING-*): advertised at the top of the v1
    // initialize result, a steer sent mid-turn as `_session/steering` is injected into that turn
    // (the agent's reply mentions it), not echoed back, and an idle session answers
    // promptRequired.
    check(init._meta?.steering?.supported === true, "the agent advertises _meta.steering.supported");
    updates = [];
    let steered;
    onUpdate = (u) => {
      if (!steered && u.sessionUpdate === "agent_message_chunk") {
        steered = ctx.request("_session/steering", {
          sessionId,
          prompt: [{ type: "text", text: "use the v2 API" }],
          _meta: { steering: { idleBehavior: "promptRequired" } },
        });
      }
    };
    const steeredTurn = await withTimeout(
      ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "a steered task" }] }),
      30000,
      "the steered prompt's answer",
    );
    onUpdate = () => {};
    check(steered !== undefined, "_session/steering was sent during the turn");
    const outcome = await withTimeout(steered, 10000, "the steering answer");
    check(outcome.outcome === "injected", `the steer mid-turn was answered ${JSON.stringify(outcome)}`);
    check(steeredTurn.stopReason === "end_turn", `the steered prompt ended ${steeredTurn.stopReason}`);
    check(text("agent_message_chunk").includes("use the v2 API"), "the steer reached the turn (the reply mentions it)");
    check(!text("user_message_chunk").includes("use the v2 API"), "the steer is not echoed to the client that sent it");
    const idle = await ctx.request("_session/steering", {
      sessionId,
      prompt: [{ type: "text", text: "too late" }],
      _meta: { steering: { idleBehavior: "promptRequired" } },
    });
    check(idle.outcome === "promptRequired", `a steer on the idle session was answered ${JSON.stringify(idle)}`);
    step(`_session/steering: injected mid-turn and heard by the turn, promptRequired when idle`);

    // A prompt cancelled once the agent has started answering.
    updates = [];
    let cancelled = false;
    onUpdate = (u) => {
      if (!cancelled && u.sessionUpdate === "agent_message_chunk") {
        cancelled = true;
        void ctx.notify(acp.methods.agent.session.cancel, { sessionId });
      }
    };
    const second = await withTimeout(
      ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "a long task" }] }),
      30000,
      "the cancelled prompt's answer",
    );
    onUpdate = () => {};
    check(cancelled, "session/cancel was sent during the turn");
    check(second.stopReason === "cancelled", `the cancelled prompt ended ${second.stopReason}`);
    step("session/cancel: the prompt answered {stopReason: cancelled}");

    const listed = await ctx.request(acp.methods.agent.session.list, {});
    check(listed.sessions.some((s) => s.sessionId === sessionId), "session/list lists the session");
    step(`session/list: ${listed.sessions.length} session(s)`);

    await ctx.request(acp.methods.agent.session.close, { sessionId });
    step("session/close");
  });
  agent.child.stdin.end();
  await withTimeout(agent.exited, 10000, "the agent to exit");
  return sessionId;
}

async function secondConnection(sessionId) {
  const agent = startAgent();
  await clientApp().connectWith(agent.stream, async (ctx) => {
    await initialize(ctx);
    updates = [];
    await withTimeout(ctx.request(acp.methods.agent.session.load, { sessionId, cwd: process.cwd(), mcpServers: [] }), 30000, "session/load");
    check(text("user_message_chunk").includes("first question"), "the history was replayed before the answer");
    check(text("agent_message_chunk").length > 0, "the agent's replies were replayed");
    step(`session/load on a second agent process: ${updates.length} updates replayed, then {}`);
  });
  agent.child.stdin.end();
  await withTimeout(agent.exited, 10000, "the agent to exit");
}

try {
  const sessionId = await firstConnection();
  await secondConnection(sessionId);
} catch (e) {
  console.error(`FAILED: ${e.stack ?? e}`);
  transcript.problems.length === 0 || console.error(transcript.problems.join("\n"));
  process.exit(1);
}
console.log(`  ${transcript.summary()}`);
if (transcript.problems.length > 0) {
  console.error(transcript.problems.join("\n"));
  process.exit(1);
}
console.log(`the official TypeScript SDK's v1 client: ${stepsPassed()} steps passed`);
