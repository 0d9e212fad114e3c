"""An ACP v1 agent written with the official ACP Python SDK (PyPI ``agent-client-protocol``,
``acp.run_agent`` and the ``Agent`` interface), over stdio, for our clients to drive. Its "model"
is scripted: each turn streams "you said: <prompt>" as three ``agent_message_chunk`` updates (no
messageId), runs one tool call that asks permission first (v1's shape, ``toolCall``), sends one
more chunk and answers the prompt with stop reason ``end_turn``. ``session/cancel`` ends the turn
(the prompt is answered ``cancelled``; the agent stops waiting for an open permission request,
whose answer the client owes per v1, the SDK having no ``$/cancel_request``). A prompt sent while
a turn runs is answered -32600 "a turn is already running" and counted as a problem: v1 has no
held prompts, and our clients must not send one. ``session/load`` replays the history (prompts as
``user_message_chunk``, replies as ``agent_message_chunk``) before its answer; list and close
too (close is "unstable" in this SDK: routed only with ``use_unstable_protocol``). Sessions live
in this process only.

    python sdk_v1_agent.py [--delay-ms N] [--report FILE]

With --report, every line both ways is decoded with the SDK's own pydantic models (requests and
notifications by method, results by the method they answer, errors as ``Error``), anything the
SDK logs is kept, and the result is written to FILE as JSON when the input ends (the format of
``../typescript-sdk/sdk-v1-agent.mjs``'s report): the prompts in order (their text), overlapping
prompts, cancels and every problem.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from typing import Any

import acp
from acp import schema
from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES

AGENT_NAME = "interop-python-sdk-v1-agent"


def option(name: str) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv[:-1] else None


# What each side sends in ACP v1, and what each request is answered with (the SDK's models).
TABLES: dict[str, dict[str, dict[str, Any]]] = {
    "client": {
        "requests": {
            "initialize": (schema.InitializeRequest, schema.InitializeResponse),
            "session/new": (schema.NewSessionRequest, schema.NewSessionResponse),
            "session/load": (schema.LoadSessionRequest, schema.LoadSessionResponse),
            "session/prompt": (schema.PromptRequest, schema.PromptResponse),
            "session/list": (schema.ListSessionsRequest, schema.ListSessionsResponse),
            "session/resume": (schema.ResumeSessionRequest, schema.ResumeSessionResponse),
            "session/close": (schema.CloseSessionRequest, schema.CloseSessionResponse),
        },
        "notifications": {
            "session/cancel": schema.CancelNotification,
            "$/cancel_request": schema.CancelRequestNotification,
        },
    },
    "agent": {
        "requests": {
            "session/request_permission": (schema.RequestPermissionRequest, schema.RequestPermissionResponse),
        },
        "notifications": {
            "session/update": schema.SessionNotification,
            "$/cancel_request": schema.CancelRequestNotification,
        },
    },
}


class Transcript:
    """Every line both ways, decoded with the SDK's models (as ../typescript-sdk/validate.mjs)."""

    def __init__(self) -> None:
        self.lines = 0
        self.valid = 0
        self.extensions: dict[str, int] = {}
        self.problems: list[str] = []
        self.open: dict[str, dict[str, str]] = {"client": {}, "agent": {}}

    def check(self, sender: str, line: str) -> None:
        self.lines += 1
        try:
            message = json.loads(line)
        except ValueError as e:
            return self.fail(sender, line, f"not JSON: {e}")
        if not isinstance(message, dict):
            return self.fail(sender, line, "not a JSON-RPC object")
        if message.get("jsonrpc") != "2.0":
            return self.fail(sender, line, 'jsonrpc is not "2.0"')
        other = "agent" if sender == "client" else "client"
        method = message.get("method")
        if isinstance(method, str):
            if method.startswith("_"):
                self.extensions[method] = self.extensions.get(method, 0) + 1
                if "id" in message:
                    self.open[sender][json.dumps(message["id"])] = method
                return None
            if "id" in message:
                models = TABLES[sender]["requests"].get(method)
                if models is None:
                    return self.fail(sender, line, f"a request for {method}, which this side does not send")
                if isinstance(message["id"], bool) or not isinstance(message["id"], (str, int)):
                    return self.fail(sender, line, "the request id is not a string or integer")
                self.open[sender][json.dumps(message["id"])] = method
                return self.decode(sender, line, models[0], message.get("params"), method)
            model = TABLES[sender]["notifications"].get(method)
            if model is None:
                return self.fail(sender, line, f"a notification {method}, which this side does not send")
            return self.decode(sender, line, model, message.get("params"), method)
        key = json.dumps(message.get("id"))
        asked = self.open[other].pop(key, None)
        if asked is None:
            return self.fail(sender, line, f"a response to {key}, which {other} never asked (or was already answered)")
        if ("result" in message) == ("error" in message):
            return self.fail(sender, line, "a response needs exactly one of result and error")
        if "error" in message:
            return self.decode(sender, line, schema.Error, message["error"], f"error for {asked}")
        if asked.startswith("_"):
            self.extensions[f"{asked} (result)"] = self.extensions.get(f"{asked} (result)", 0) + 1
            return None
        return self.decode(sender, line, TABLES[other]["requests"][asked][1], message["result"], f"result of {asked}")

    def decode(self, sender: str, line: str, model: Any, value: Any, what: str) -> None:
        try:
            model.model_validate(value)
        except Exception as e:  # pydantic.ValidationError
            errors = getattr(e, "errors", None)
            issues = "; ".join(f"{'.'.join(map(str, i['loc'])) or '(root)'}: {i['msg']}" for i in errors()) if errors else str(e)
            return self.fail(sender, line, f"{what}: {issues}")
        self.valid += 1
        return None

    def fail(self, sender: str, line: str, why: str) -> None:
        self.problems.append(f"{sender} sent {line[:300] + '…' if len(line) > 300 else line}\n    {why}")

    def summary(self) -> str:
        ext = ", ".join(f"{m} ×{n}" for m, n in self.extensions.items())
        return (
            f"lines: {self.lines}, decoded by the SDK's v1 models: {self.valid}, "
            f"extension messages: {ext or 'none'}, invalid: {len(self.problems)}"
        )


class Recorder(logging.Handler):
    """Everything the SDK logs (a line it could not parse, a failed handler, a warning)."""

    # The SDK routes no `$/cancel_request` (v1's request cancellation): it logs each one as an
    # unhandled notification. That is the SDK's gap, not the client's fault: counted apart.
    IGNORED = "Unhandled error while handling notification method=%s"

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []
        self.unhandled: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == self.IGNORED and record.args and str(record.args[0]).startswith("$/"):
            self.unhandled[str(record.args[0])] = self.unhandled.get(str(record.args[0]), 0) + 1
            return
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += f": {record.exc_info[1]!r}"
        self.records.append(f"the SDK logged: {text}")


class Turn:
    def __init__(self) -> None:
        self.cancelled = asyncio.Event()


class Session:
    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self.open = True
        # ("user", [content blocks]) | ("agent", [texts])
        self.history: list[tuple[str, list[Any]]] = []
        self.turn: Turn | None = None
        self.done: asyncio.Future[Any] | None = None


def not_found(session_id: str) -> acp.RequestError:
    return acp.RequestError(-32002, "Resource not found", {"sessionId": session_id})


def text_of(prompt: list[Any]) -> str:
    return "\n".join(b.text for b in prompt if isinstance(b, schema.TextContentBlock))


class ScriptedAgent:
    """The agent side (``acp.Agent``): one scripted turn per prompt."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.conn: Any = None
        self.sessions: dict[str, Session] = {}
        self.next_id = 0
        self.seen: dict[str, Any] = {
            "requestedVersions": [],
            "promptTexts": [],
            "overlappingPrompts": 0,
            "cancels": 0,
            "cancelledTurns": 0,
            "loads": 0,
        }
        self.problems: list[str] = []

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    def mint(self, prefix: str) -> str:
        self.next_id += 1
        return f"{prefix}_{self.next_id}"

    # v1 whatever the client asked: the SDK decodes the request into v1's model, which ignores
    # members it does not know (a v2 client's `info` and `capabilities`).
    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **_: Any) -> schema.InitializeResponse:
        self.seen["requestedVersions"].append(protocol_version)
        return schema.InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                session_capabilities=schema.SessionCapabilities(list=schema.SessionListCapabilities(), close=schema.SessionCloseCapabilities()),
            ),
            agent_info=schema.Implementation(name=AGENT_NAME, version="0.12.1"),
            auth_methods=[],
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **_: Any) -> schema.NewSessionResponse:
        session_id = self.mint("sess")
        self.sessions[session_id] = Session(cwd)
        return schema.NewSessionResponse(session_id=session_id)

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None, **_: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            raise not_found(session_id)
        self.seen["loads"] += 1
        # The history first, then the answer.
        for role, items in session.history:
            for item in items:
                update = acp.update_user_message(item) if role == "user" else acp.update_agent_message_text(item)
                await self.conn.session_update(session_id=session_id, update=update)
        session.open = True
        session.cwd = cwd
        return None

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> schema.ListSessionsResponse:
        return schema.ListSessionsResponse(
            sessions=[schema.SessionInfo(session_id=sid, cwd=s.cwd) for sid, s in self.sessions.items() if not cwd or s.cwd == cwd]
        )

    # Closing ends the running turn and the session's activity; its history stays loadable.
    async def close_session(self, session_id: str, **_: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            return None
        if session.turn is not None:
            session.turn.cancelled.set()
        if session.done is not None:
            await asyncio.shield(session.done)
        session.open = False
        return None

    async def cancel(self, session_id: str, **_: Any) -> None:
        self.seen["cancels"] += 1
        session = self.sessions.get(session_id)
        if session is not None and session.turn is not None:
            session.turn.cancelled.set()

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> schema.PromptResponse:
        session = self.sessions.get(session_id)
        if session is None or not session.open:
            raise not_found(session_id)
        if session.turn is not None:
            self.seen["overlappingPrompts"] += 1
            self.problems.append(f"a prompt arrived while a turn was running in {session_id}: {json.dumps(text_of(prompt))}")
            raise acp.RequestError(-32600, "a turn is already running")
        self.seen["promptTexts"].append(text_of(prompt))
        turn = session.turn = Turn()
        session.done = asyncio.get_running_loop().create_future()
        try:
            stop_reason = await self.run_turn(session_id, session, prompt, turn)
        finally:
            session.turn = None
            session.done.set_result(None)
        if stop_reason == "cancelled":
            self.seen["cancelledTurns"] += 1
        return schema.PromptResponse(stop_reason=stop_reason)

    async def sleep(self, turn: Turn) -> bool:
        """Waits the delay; False when the turn is cancelled first."""
        try:
            await asyncio.wait_for(turn.cancelled.wait(), self.delay)
        except asyncio.TimeoutError:
            return True
        return False

    async def run_turn(self, session_id: str, session: Session, prompt: list[Any], turn: Turn) -> str:
        async def update(u: Any) -> None:
            await self.conn.session_update(session_id=session_id, update=u)

        reply: list[str] = []
        session.history += [("user", list(prompt)), ("agent", reply)]

        async def say(text: str) -> None:
            reply.append(text)
            await update(acp.update_agent_message_text(text))

        text = text_of(prompt)
        half = (len(text) + 1) // 2
        for i, piece in enumerate(["you said: ", text[:half], text[half:]]):
            if i > 0 and not await self.sleep(turn):
                return "cancelled"
            await say(piece)
        if not await self.sleep(turn):
            return "cancelled"
        tool_call_id = self.mint("call")
        await update(acp.start_tool_call(tool_call_id, "Run the tests", kind="execute", status="pending"))
        asked = asyncio.ensure_future(
            self.conn.request_permission(
                session_id=session_id,
                tool_call=schema.ToolCallUpdate(tool_call_id=tool_call_id, title="Run the tests", kind="execute", status="pending"),
                options=[
                    schema.PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                    schema.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
                ],
            )
        )
        stop = asyncio.ensure_future(turn.cancelled.wait())
        await asyncio.wait({asked, stop}, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        outcome: Any = None
        if asked.done() and not asked.cancelled() and asked.exception() is None:
            outcome = asked.result().outcome
        else:
            # Cancelled first: stop waiting (the SDK drops the client's late answer quietly).
            asked.cancel()
        allowed = isinstance(outcome, schema.AllowedOutcome) and outcome.option_id == "allow"
        await update(acp.update_tool_call(tool_call_id, status="completed" if allowed else "failed"))
        if turn.cancelled.is_set() or outcome is None or isinstance(outcome, schema.DeniedOutcome):
            return "cancelled"
        if not await self.sleep(turn):
            return "cancelled"
        await say(" (the tests ran)" if allowed else " (the tests were not run)")
        return "end_turn"


class LineTap:
    """Calls `each` with every complete line of a byte stream (no ending)."""

    def __init__(self, each: Any) -> None:
        self.each = each
        self.partial = b""

    def __call__(self, data: bytes) -> None:
        self.partial += data
        while b"\n" in self.partial:
            line, self.partial = self.partial.split(b"\n", 1)
            text = line.decode("utf-8", "replace").rstrip("\r")
            if text.strip():
                self.each(text)


async def tapped_stdio(transcript: Transcript) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The SDK's stdio streams, every line both ways checked on `transcript` before it passes."""
    reader, writer = await acp.stdio_streams(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
    tapped = asyncio.StreamReader(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
    incoming = LineTap(lambda line: transcript.check("client", line))

    async def pump() -> None:
        while chunk := await reader.read(65536):
            incoming(chunk)
            tapped.feed_data(chunk)
        tapped.feed_eof()

    tapped.pump = asyncio.ensure_future(pump())  # type: ignore[attr-defined]
    outgoing = LineTap(lambda line: transcript.check("agent", line))
    write = writer.write

    def tapped_write(data: bytes) -> None:
        outgoing(data)
        write(data)

    writer.write = tapped_write  # type: ignore[method-assign]
    return tapped, writer


async def main() -> int:
    delay = float(option("--delay-ms") or 30) / 1000
    report_to = option("--report")
    logging.basicConfig(level=logging.WARNING)  # to stderr, as well as into the report
    recorder = Recorder()
    logging.getLogger().addHandler(recorder)
    logging.captureWarnings(True)
    transcript = Transcript()
    agent = ScriptedAgent(delay)
    reader, writer = await tapped_stdio(transcript)
    # `use_unstable_protocol`: this SDK routes session/close (stable in ACP v1) only then.
    await acp.run_agent(agent, writer, reader, use_unstable_protocol=True)
    if report_to:
        seen = agent.seen
        summary = (
            f"{transcript.summary()}, prompts: {len(seen['promptTexts'])}, overlapping prompts: {seen['overlappingPrompts']}, "
            f"cancels: {seen['cancels']} (turns cancelled: {seen['cancelledTurns']})"
        )
        report = {
            "summary": summary,
            "lines": transcript.lines,
            "valid": transcript.valid,
            "problems": transcript.problems + recorder.records + agent.problems,
            "prompts": len(seen["promptTexts"]),
            **seen,
            "unhandledBySdk": recorder.unhandled,
        }
        # Written whole under another name, then renamed: a reader never sees half of it.
        with open(f"{report_to}.partial", "w") as f:
            json.dump(report, f, indent=1, ensure_ascii=False)
        os.replace(f"{report_to}.partial", report_to)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
