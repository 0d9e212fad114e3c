// The validator refuses what the SDK's schemas refuse (run first by the interop stage, so a
// validator that passes everything cannot go unnoticed).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Transcript } from "./validate.mjs";

const line = (v) => JSON.stringify(v);

test("valid lines of a status round trip pass", () => {
  const t = new Transcript();
  t.check("client", line({ jsonrpc: "2.0", id: 1, method: "session/status", params: { sessionId: "s" } }));
  t.check("agent", line({ jsonrpc: "2.0", id: 1, result: { status: "open", state: { state: "idle" } } }));
  assert.deepEqual(t.problems, []);
  assert.equal(t.valid, 2);
});

test("a chunk without its messageId, a null request id and an unasked response fail", () => {
  const t = new Transcript();
  t.check("agent", line({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "x" } } } }));
  t.check("agent", line({ jsonrpc: "2.0", id: null, method: "session/request_permission", params: {} }));
  t.check("agent", line({ jsonrpc: "2.0", id: 7, result: {} }));
  t.check("client", "{not json");
  assert.equal(t.problems.length, 4, t.problems.join("\n"));
});

test("a result is checked against the answered method's schema", () => {
  const t = new Transcript();
  t.check("client", line({ jsonrpc: "2.0", id: "a", method: "session/prompt", params: { sessionId: "s", prompt: [{ type: "text", text: "hi" }] } }));
  t.check("agent", line({ jsonrpc: "2.0", id: "a", result: { stopReason: "end_turn" } }));
  assert.equal(t.problems.length, 1, "a v1-style prompt answer is not a v2 PromptResponse");
});

test("extension methods are counted, not failed", () => {
  const t = new Transcript();
  t.check("client", line({ jsonrpc: "2.0", id: 2, method: "_acp-inject/x", params: {} }));
  t.check("agent", line({ jsonrpc: "2.0", id: 2, result: {} }));
  assert.deepEqual(t.problems, []);
  assert.equal(t.extensions.get("_acp-inject/x"), 1);
});
