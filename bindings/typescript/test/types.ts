// Type-level tests of @acp-inject/schema: this file only has to compile (`tsc`). Each
// `@ts-expect-error` line must be an error, so a type that is too loose fails the build.

import {
  decodeMessage,
  isKnownSessionUpdate,
  isKnownContentBlock,
  isKnownStateUpdate,
  type ContentBlock,
  type InjectCapabilities,
  type InjectMode,
  type Message,
  type ResponseResults,
  type SessionUpdate,
  type StopReason,
  type UserMessage,
} from "@acp-inject/schema";

/** Known tags narrow after `isKnown…`, and the switch is exhaustive. */
export function describeUpdate(update: SessionUpdate): string {
  if (!isKnownSessionUpdate(update)) {
    return `unknown update ${update.sessionUpdate}`;
  }
  switch (update.sessionUpdate) {
    case "user_message":
    case "agent_message":
    case "agent_thought":
      return `${update.messageId}: ${update.content === undefined ? "unchanged" : update.content === null ? "cleared" : update.content.length}`;
    case "user_message_chunk":
    case "agent_message_chunk":
    case "agent_thought_chunk":
      return `${update.messageId} += ${update.content.type}`;
    case "_agent_message_clear":
      return `clear ${update.messageId ?? "current"}`;
    case "state_update":
      // The state is a nested open union: its own guard narrows it.
      if (isKnownStateUpdate(update) && update.state === "idle") return `idle (${update.stopReason ?? "?"})`;
      return `state ${update.state}`;
    case "tool_call_update":
    case "tool_call_content_chunk":
      return update.toolCallId;
    case "plan_update":
      return update.plan.type;
    case "usage_update":
      return `${update.used}/${update.size}`;
    case "session_info_update":
      return `title ${update.title === undefined ? "unchanged" : update.title ?? "cleared"}`;
    case "replay_complete":
      return "replay complete";
    case "_acp-inject/pending":
      return `${update.pending.length} pending`;
    case "_acp-inject/session_closed":
      return "closed";
    default: {
      const unreachable: never = update;
      return unreachable;
    }
  }
}

export function text(block: ContentBlock): string | undefined {
  return isKnownContentBlock(block) && block.type === "text" ? block.text : undefined;
}

/** The envelope narrows `params` by method. */
export function promptText(message: Message): string | undefined {
  if ("method" in message && message.method === "session/prompt") {
    const first = message.params.prompt[0];
    return first === undefined ? undefined : text(first);
  }
  return undefined;
}

export const acceptedId = (result: ResponseResults["session/inject"]): string => result.messageId;

// Tristate: absent, null and a value are all valid; `undefined` is not (exactOptionalPropertyTypes).
export const unchanged: UserMessage = { messageId: "m_1" };
export const cleared: UserMessage = { messageId: "m_1", content: null };
export const replacedContent: UserMessage = { messageId: "m_1", content: [{ type: "text", text: "hi" }] };
// @ts-expect-error `undefined` is not "absent"
export const notAbsent: UserMessage = { messageId: "m_1", content: undefined };

// Open enums take any string; closed ones do not.
export const extensionStop: StopReason = "_x.dev/paused";
export const queue: InjectMode = "queue";
// @ts-expect-error InjectMode is closed
export const later: InjectMode = "later";

// Aliases are decode-only: the output types use the schema's spelling.
// @ts-expect-error `steer_in_stream` is not a member of the type
export const aliased: InjectCapabilities = { modes: ["steer"], steer_in_stream: ["finish"] };
// @ts-expect-error `state_change` is not a known tag, and a plain string is not an UnknownTag
export const aliasedTag: SessionUpdate = { sessionUpdate: "state_change", state: "idle" };

// A known tag with the wrong members is an error.
// @ts-expect-error `user_message` needs `messageId`
export const missingId: SessionUpdate = { sessionUpdate: "user_message" };

export const decode = (value: unknown): Message | Message[] => decodeMessage(value);
