"""A complete ACP v2 agent with session/inject, in Python: a scripted "model" that streams its
answer, runs two tool calls (asking permission before the second) and reads the steers the
user sends mid-turn at each tool result. Queue, steer, revoke, replace, cancel, status, list,
resume and close are the library's.

    python bindings/python/examples/agent.py [--store sessions.db] [--delay-ms 50] [--require-api-key]

With --require-api-key it advertises one auth method (`api-key`) and serves a client only once
it logged in with it (`auth/login`, v1's `authenticate`), which succeeds when the environment
variable ACP_EXAMPLE_API_KEY is set.
"""

import argparse
import itertools
import os

from acp_inject import (
    Agent,
    AuthMethodAgent,
    BreakPoint,
    StopReason,
    ToolCallStatus,
    ToolKind,
    TurnEnd,
    Usage,
    agent_config,
    refused,
    run_agent,
    text_of,
)


class ScriptedAgent(Agent):
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls = itertools.count(1)               # tool-call ids unique across turns

    async def run(self, turn, messages):
        heard = [text_of(m.content) for m in messages]
        turn.say(f"Working on: {'; '.join(heard)}. ")
        for step in (1, 2):
            if not await turn.sleep(self.delay):
                return None                       # cancelled: the library reports it
            turn.say(f"step {step} of my plan. ")
        for tool in (1, 2):
            call = f"call_{turn.session_id}_{next(self.calls)}"
            turn.tool_call(call, ToolCallStatus.PENDING, title=f"Run step {tool}", kind=ToolKind.EXECUTE)
            if tool == 2 and await turn.permission(f"Allow step {tool}?", tool_call_id=call) != "allow":
                turn.tool_call(call, ToolCallStatus.FAILED)
                continue
            turn.tool_call(call, ToolCallStatus.IN_PROGRESS)
            if not await turn.sleep(self.delay):
                return None
            turn.tool_call(call, ToolCallStatus.COMPLETED, output=f"step {tool} done")
            for steer in turn.break_point(BreakPoint.TOOL_RESULT):
                heard.append(text_of(steer.content))      # the model reads the user's steer here
                turn.say(f"(noted: {text_of(steer.content)}) ")
        turn.say(f"Done ({len(heard)} message(s) handled this turn).")
        usage = Usage(total_tokens=100 * len(heard) + 50, input_tokens=100 * len(heard), output_tokens=50)
        return TurnEnd(stop_reason=StopReason.END_TURN, usage=usage)

    async def authenticate(self, method_id):
        if not os.environ.get("ACP_EXAMPLE_API_KEY"):
            raise refused(-32000, "Authentication required", "set ACP_EXAMPLE_API_KEY")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="keep sessions in this SQLite file, or a postgres:// database several hosts share")
    parser.add_argument("--delay-ms", type=int, default=50, help="pause between model steps")
    parser.add_argument("--listen", metavar="HOST:PORT", help="serve over the network instead of stdio (prints the URL)")
    parser.add_argument("--require-api-key", action="store_true", help="serve a client once it logged in with ACP_EXAMPLE_API_KEY set")
    args = parser.parse_args()
    api_key = AuthMethodAgent(method_id="api-key", name="API key", description="ACP_EXAMPLE_API_KEY in the agent's environment")
    config = agent_config("acp-inject-python-example", auth_methods=[api_key] if args.require_api_key else [], auth_required=args.require_api_key)
    run_agent(ScriptedAgent(args.delay_ms / 1000), config, store=args.store, listen=args.listen)


if __name__ == "__main__":
    main()
