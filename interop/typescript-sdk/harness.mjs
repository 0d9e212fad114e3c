// What the SDK-driven clients share: reading `[--store DIR] -- AGENT_COMMAND [ARGS...]`,
// starting the agent with the store and the SDK's stream over its stdio (every line checked on
// a transcript), numbered steps, checks and timeouts.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { tappedStream } from "./validate.mjs";

/**
 * The agent command and the store file from the command line (`script` names the usage).
 * Without `--store DIR` a temporary directory is used and removed at exit.
 */
export function agentFromArgs(script) {
  const args = process.argv.slice(2);
  const dash = args.indexOf("--");
  const command = dash >= 0 ? args.slice(dash + 1) : [];
  if (command.length === 0) {
    console.error(`usage: node ${script} [--store DIR] -- AGENT_COMMAND [ARGS...]`);
    process.exit(2);
  }
  const storeAt = args.indexOf("--store");
  const ownStore = !(storeAt >= 0 && storeAt < dash);
  const storeDir = ownStore ? mkdtempSync(join(tmpdir(), "acp-interop-")) : args[storeAt + 1];
  process.on("exit", () => {
    if (ownStore) rmSync(storeDir, { recursive: true, force: true });
  });
  return { command, store: join(storeDir, "sessions.db") };
}

/**
 * Starts `command` with `--store store`; returns the SDK's stream over its stdio (built with
 * the entrypoint's `ndJsonStream`, every line checked on `transcript`), the child and its exit.
 */
export function startAgent(ndJsonStream, { command, store }, transcript) {
  const [cmd, ...rest] = command;
  const child = spawn(cmd, [...rest, "--store", store], { stdio: ["pipe", "pipe", "inherit"] });
  const stream = tappedStream(ndJsonStream, Readable.toWeb(child.stdout), Writable.toWeb(child.stdin), transcript, "client", "agent");
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return { stream, child, exited };
}

let steps = 0;

/** Logs a passed step, numbered. */
export function step(what) {
  steps += 1;
  console.log(`  ok ${steps}: ${what}`);
}

/** How many steps passed. */
export const stepsPassed = () => steps;

export function check(condition, what) {
  if (!condition) throw new Error(`check failed: ${what}`);
}

export function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Reads an SDK session's updates until an idle state; returns them and the stop reason. */
export async function untilIdle(session, onUpdate = () => {}) {
  const updates = [];
  for (;;) {
    const message = await withTimeout(session.nextUpdate(), 20000, "the next session update");
    if (message.kind === "stop") return { updates, stopReason: message.stopReason };
    updates.push(message.update);
    onUpdate(message.update);
  }
}

/**
 * The SDK client app the v2 SDK-driven clients share: every permission request allowed
 * (counted in `state.permissions`), and `session/update` notifications handed to
 * `state.rawUpdates` when it is set (a resume's replay, which no ActiveSession routes).
 */
export function allowingClient(acp, name, state) {
  return acp
    .client({ name })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      state.rawUpdates?.(params);
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      state.permissions += 1;
      const allow = params.options.find((o) => o.kind === "allow_once" || o.kind === "allow_always") ?? params.options[0];
      return { outcome: { outcome: "selected", optionId: allow.optionId } };
    });
}
