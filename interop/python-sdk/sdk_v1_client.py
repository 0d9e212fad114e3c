"""The official ACP Python SDK's client (PyPI `agent-client-protocol`, ACP v1, what Python
editors and tools build on) drives one of our agents over stdio:

    initialize (version 1) -> session/new -> a prompt, answered with stop reason ``end_turn``
    when its turn ends, the agent's output arriving as chunks and its permission request (v1's
    shape, with ``toolCall``) answered -> a prompt cancelled with session/cancel, answered
    ``cancelled`` -> session/list -> session/close -> a second agent process on the same store
    loads the session (session/load: the history replayed before the answer).

The SDK decodes every message it receives into its pydantic models (a line it cannot decode
fails the request or is reported, and fails this script); any failed step exits non-zero.

    python sdk_v1_client.py -- AGENT_COMMAND [ARGS...]

The agent command must accept ``--store PATH`` and ask one permission per turn.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import tempfile
from typing import Any

import acp
from acp.schema import (
    AgentMessageChunk,
    ClientCapabilities,
    Implementation,
    RequestPermissionResponse,
    AllowedOutcome,
    UserMessageChunk,
)


class Recorder(logging.Handler):
    """Every error the SDK logs (a message it could not decode, a failed handler)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage())


class Client:
    """The client side: records updates and answers permission requests (allow)."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.permissions: list[Any] = []
        self.on_update = lambda update: None

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any) -> RequestPermissionResponse:
        self.permissions.append(tool_call)
        allow = next((o for o in options if o.kind in ("allow_once", "allow_always")), options[0])
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=allow.option_id))

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)
        self.on_update(update)

    def text(self, kind: type) -> str:
        return "".join(u.content.text for u in self.updates if isinstance(u, kind) and getattr(u.content, "text", None))


steps = 0


def step(what: str) -> None:
    global steps
    steps += 1
    print(f"  ok {steps}: {what}", flush=True)


def check(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(f"check failed: {what}")


async def initialize(conn: Any) -> Any:
    init = await conn.initialize(
        protocol_version=acp.PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="interop-python-sdk-client", version="1.0.0"),
    )
    check(acp.PROTOCOL_VERSION == 1, f"the SDK speaks protocol version {acp.PROTOCOL_VERSION}")
    check(init.protocol_version == 1, f"the agent answered protocol version {init.protocol_version}")
    return init


async def first_connection(command: list[str], store: str) -> str:
    client = Client()
    async with acp.spawn_agent_process(client, command[0], *command[1:], "--store", store) as (conn, process):
        init = await initialize(conn)
        check(init.agent_capabilities is not None and init.agent_capabilities.load_session is True, "the agent advertises loadSession")
        step(f"initialize: {init.agent_info.name if init.agent_info else '?'}, protocol {init.protocol_version}, loadSession")

        session = await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
        session_id = session.session_id
        step(f"session/new: {session_id}")

        client.updates.clear()
        answer = await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[acp.text_block("first question")]), 30)
        check(answer.stop_reason == "end_turn", f"the prompt ended {answer.stop_reason}")
        check(len(client.text(AgentMessageChunk)) > 0, "the agent's reply arrived as agent_message_chunk")
        check(not any(isinstance(u, UserMessageChunk) for u in client.updates), "the client's own prompt is not echoed")
        step(f"session/prompt: stop reason end_turn after {len(client.updates)} updates")
        check(len(client.permissions) >= 1, "the agent asked for permission during the turn")
        step(f"session/request_permission: {len(client.permissions)} answered, toolCall {client.permissions[0].tool_call_id}")

        client.updates.clear()
        cancelled = asyncio.Event()

        def cancel_on_first_chunk(update: Any) -> None:
            if isinstance(update, AgentMessageChunk) and not cancelled.is_set():
                cancelled.set()
                asyncio.get_running_loop().create_task(conn.cancel(session_id=session_id))

        client.on_update = cancel_on_first_chunk
        second = await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[acp.text_block("a long task")]), 30)
        client.on_update = lambda update: None
        check(cancelled.is_set(), "session/cancel was sent during the turn")
        check(second.stop_reason == "cancelled", f"the cancelled prompt ended {second.stop_reason}")
        step("session/cancel: the prompt answered with stop reason cancelled")

        listed = await conn.list_sessions()
        check(any(s.session_id == session_id for s in listed.sessions), "session/list lists the session")
        step(f"session/list: {len(listed.sessions)} session(s)")

        await conn.close_session(session_id=session_id)
        step("session/close")
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 10)
    return session_id


async def second_connection(command: list[str], store: str, session_id: str) -> None:
    client = Client()
    async with acp.spawn_agent_process(client, command[0], *command[1:], "--store", store) as (conn, process):
        await initialize(conn)
        await asyncio.wait_for(conn.load_session(cwd=os.getcwd(), session_id=session_id, mcp_servers=[]), 30)
        check("first question" in client.text(UserMessageChunk), "the history was replayed before the answer")
        check(len(client.text(AgentMessageChunk)) > 0, "the agent's replies were replayed")
        step(f"session/load on a second agent process: {len(client.updates)} updates replayed")
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 10)


async def main(command: list[str]) -> int:
    recorder = Recorder()
    logging.getLogger().addHandler(recorder)
    with tempfile.TemporaryDirectory(prefix="acp-interop-py-") as tmp:
        store = os.path.join(tmp, "sessions.db")
        session_id = await first_connection(command, store)
        await second_connection(command, store, session_id)
    if recorder.records:
        print("the SDK reported problems:\n  " + "\n  ".join(recorder.records), file=sys.stderr)
        return 1
    print(f"the official Python SDK's v1 client: {steps} steps passed")
    return 0


if __name__ == "__main__":
    if "--" not in sys.argv or sys.argv.index("--") == len(sys.argv) - 1:
        print("usage: python sdk_v1_client.py -- AGENT_COMMAND [ARGS...]", file=sys.stderr)
        sys.exit(2)
    sys.exit(asyncio.run(main(sys.argv[sys.argv.index("--") + 1 :])))
