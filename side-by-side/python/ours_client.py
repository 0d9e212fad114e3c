"""The side-by-side client, written with acp_inject (ACP v2 with session/inject; v1 agents
too): it starts an agent, opens a session, sends one prompt, prints the agent's reply as it
streams, allows the tool call the agent asks permission for, and prints the stop reason. While
the turn runs it also steers it, queues a follow-up, replaces one queued message and revokes
another, printing each message's fate. An agent without session/inject (every ACP v1 agent)
gets the queue from this client, one prompt per message, after the turn.

    python ours_client.py AGENT_COMMAND [ARGS...]
"""

import asyncio
import sys

import acp_inject as acp


async def allow(request: acp.RequestPermissionRequest) -> str:
    allow = next(option for option in request.options if option.kind == acp.PermissionOptionKind.ALLOW_ONCE)
    print(f"\n[permission] {request.title}? {allow.name}")
    return allow.option_id


async def main(command: list[str]) -> None:
    async with acp.connect(command, on_permission=allow, steer_fallback=acp.SteerFallback.QUEUE) as agent:
        session = await agent.new_session()  # in the current directory
        await session.prompt("hello there")

        # While the turn runs: a steer (the agent reads it at its next break-point), a queued
        # follow-up (after the turn), and two queued messages changed while still pending.
        steer = await session.inject("keep it short", mode="steer")
        follow_up = await session.inject("now say goodbye")
        draft = await session.inject("draft")
        await session.replace(draft, "and thanks")
        await session.revoke(await session.inject("never mind"))

        # Print the session's activity until every message we sent was delivered and its turn ended.
        waiting = {steer, follow_up, draft}
        async for activity in session.events():
            match activity:
                case acp.PendingItem(mode=mode, status=status, content=content, message_id=id):  # one of ours changed
                    print(f"\n[{mode} {status}] {acp.text_of(content)}")
                    if status == acp.ItemStatus.DELIVERED:
                        waiting.discard(id)
                case acp.AgentMessageChunk(content=content):
                    print(acp.text_of(content), end="", flush=True)
                case acp.ToolCallUpdate(status=status):
                    print(f"\n[tool] {status}")
                case acp.IdleStateUpdate(stop_reason=reason):
                    print(f"\nstop reason: {reason}")
                    if not waiting:
                        break


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
