"""The side-by-side agent, written with the official ACP Python SDK (PyPI
``agent-client-protocol``, ACP v1): it echoes each prompt as "you said: <text>" in a few
chunks, runs one tool call after asking permission, and ends the turn; ``session/cancel``
ends it ``cancelled``.

    python official_agent.py
"""

import asyncio
import contextlib
from typing import Any
from uuid import uuid4

from acp import (
    PROTOCOL_VERSION,
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    run_agent,
    start_tool_call,
    update_agent_message_text,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import AllowedOutcome, Implementation, PermissionOption, TextContentBlock, ToolCallUpdate

STEP = 0.05  # seconds between the "model's" chunks


class EchoAgent(Agent):
    _conn: Client

    def __init__(self) -> None:
        self._cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_info=Implementation(name="side-by-side-official-agent", version="0.1.0"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = uuid4().hex
        self._cancelled[session_id] = asyncio.Event()
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self._cancelled[session_id].set()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        cancelled = self._cancelled[session_id]
        cancelled.clear()
        text = "".join(block.text for block in prompt if isinstance(block, TextContentBlock))
        half = len(text) // 2
        for chunk in ("you said: ", text[:half], text[half:]):
            if await self.wait(cancelled):
                return PromptResponse(stop_reason="cancelled")
            await self._conn.session_update(session_id, update_agent_message_text(chunk))

        call_id = uuid4().hex
        await self._conn.session_update(
            session_id, start_tool_call(call_id, "Run the tests", kind="execute", status="pending")
        )
        answer = await self._conn.request_permission(
            session_id,
            ToolCallUpdate(tool_call_id=call_id, title="Run the tests"),
            [
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        allowed = isinstance(answer.outcome, AllowedOutcome) and answer.outcome.option_id == "allow"
        await self._conn.session_update(
            session_id, update_tool_call(call_id, status="completed" if allowed else "failed")
        )
        if cancelled.is_set():
            return PromptResponse(stop_reason="cancelled")
        return PromptResponse(stop_reason="end_turn")

    @staticmethod
    async def wait(cancelled: asyncio.Event) -> bool:
        """Waits one step; True when the turn was cancelled meanwhile."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(cancelled.wait(), STEP)
        return cancelled.is_set()


async def main() -> None:
    await run_agent(EchoAgent())


if __name__ == "__main__":
    asyncio.run(main())
