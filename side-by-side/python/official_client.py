"""The side-by-side client, written with the official ACP Python SDK (PyPI
``agent-client-protocol``, ACP v1): it starts an agent, opens a session, sends one prompt,
prints the agent's reply as it streams, allows the tool call the agent asks permission for,
and prints the stop reason.

    python official_client.py AGENT_COMMAND [ARGS...]
"""

import asyncio
import os
import sys
from typing import Any

from acp import PROTOCOL_VERSION, RequestPermissionResponse, spawn_agent_process, text_block
from acp.interfaces import Client
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    Implementation,
    PermissionOption,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)


class PrintingClient(Client):
    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        allow = next(option for option in options if option.kind == "allow_once")
        print(f"\n[permission] {tool_call.title}? {allow.name}")
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=allow.option_id))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContentBlock):
            print(update.content.text, end="", flush=True)
        elif isinstance(update, (ToolCallStart, ToolCallProgress)):
            print(f"\n[tool] {update.status}")


async def main(command: list[str]) -> None:
    async with spawn_agent_process(PrintingClient(), *command) as (conn, _process):
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_info=Implementation(name="side-by-side-official-client", version="0.1.0"),
        )
        session = await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("hello there")])
        print(f"\nstop reason: {response.stop_reason}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
