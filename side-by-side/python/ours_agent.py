"""The side-by-side agent, written with acp_inject (ACP v2 with session/inject; v1 clients
too): it echoes each prompt as "you said: <text>" in a few chunks, runs one tool call after
asking permission, reads the steers the user sent meanwhile, and ends the turn; cancel ends it
``cancelled``. Queue, steer, revoke, replace, list, resume, close and status are the
library's.

    python ours_agent.py
"""

from uuid import uuid4

from acp_inject import Agent, BreakPoint, ToolCallStatus, ToolKind, agent_config, run_agent, text_of

STEP = 0.05  # seconds between the "model's" chunks


class EchoAgent(Agent):
    async def run(self, turn, messages):
        text = " / ".join(text_of(message.content) for message in messages)
        half = len(text) // 2
        for chunk in ("you said: ", text[:half], text[half:]):
            if not await turn.sleep(STEP):
                return  # cancelled: the library ends the turn so
            turn.say(chunk)

        call_id = uuid4().hex
        turn.tool_call(call_id, ToolCallStatus.PENDING, title="Run the tests", kind=ToolKind.EXECUTE)
        allowed = await turn.permission("Run the tests", tool_call_id=call_id) == "allow"
        turn.tool_call(call_id, ToolCallStatus.COMPLETED if allowed else ToolCallStatus.FAILED)
        for steer in turn.break_point(BreakPoint.TOOL_RESULT):
            turn.say(f" (steered: {text_of(steer.content)})")


if __name__ == "__main__":
    run_agent(EchoAgent(), agent_config("side-by-side-ours-agent"))
