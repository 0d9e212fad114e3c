"""A runtime loop written in Python (a fake model with tool calls) drives the agent side
through queue, steer, revoke, replace, cancel and a permission hold, over the binding."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from acp_inject import (
    AgentCore,
    AgentOutput,
    BreakPoint,
    ClientSession,
    ContentBlock,
    InjectCapabilities,
    InjectMode,
    RuntimeAction,
    RuntimeEvent,
    SteerInStream,
    TurnState,
    default_agent_options,
    text,
)


@dataclass
class FakeModel:
    """Each turn: streams a chunk, runs `tools` tool calls (one may ask permission), ends."""

    core: AgentCore
    client: ClientSession
    tools: int = 2
    permission_on_tool: Optional[int] = None
    seen_inputs: List[str] = field(default_factory=list)
    turns: int = 0

    def feed(self, outputs: List[AgentOutput]) -> List[RuntimeAction]:
        actions = []
        for o in outputs:
            if isinstance(o, AgentOutput.LINE):
                self.client.receive(o.line)
            elif isinstance(o, AgentOutput.ACTION):
                actions.append(o.action)
                if isinstance(o.action, (RuntimeAction.START_TURN, RuntimeAction.DELIVER)):
                    self.seen_inputs += [json.loads(m.content_json)[0]["text"] for m in o.action.messages]
        return actions

    def send(self, line: str) -> List[RuntimeAction]:
        return self.feed(self.core.handle_line("c1", line))

    def event(self, event: RuntimeEvent) -> List[RuntimeAction]:
        return self.feed(self.core.runtime_event("s1", event))

    def run_turn(self, during_tool=None) -> None:  # type: ignore[no-untyped-def]
        self.turns += 1
        self.event(RuntimeEvent.UPDATE(update_json=json.dumps({"sessionUpdate": "agent_message_chunk", "messageId": f"a{self.turns}", "content": {"type": "text", "text": "working"}})))
        for tool in range(self.tools):
            if during_tool is not None:
                during_tool(tool)
            if self.permission_on_tool == tool:
                self.event(RuntimeEvent.PERMISSION_REQUESTED())
                assert self.client.snapshot().state == TurnState.REQUIRES_ACTION
                if during_tool is not None:
                    during_tool(-1)  # the user acts while the permission prompt is open
                self.event(RuntimeEvent.PERMISSION_RESOLVED())
            self.event(RuntimeEvent.BREAK_POINT(kind=BreakPoint.TOOL_RESULT))
        self.event(RuntimeEvent.TURN_ENDED(stop_reason="end_turn", usage_json='{"totalTokens": 3, "inputTokens": 2, "outputTokens": 1}'))


def make() -> FakeModel:
    core = AgentCore(default_agent_options())
    core.create_session("s1")
    caps = InjectCapabilities(modes=[InjectMode.QUEUE, InjectMode.STEER], replace=True, steer_in_stream=[SteerInStream.FINISH])
    return FakeModel(core, ClientSession("s1", caps), permission_on_tool=1)


def transcript_texts(model: FakeModel) -> List[str]:
    return [b.text for e in model.client.snapshot().transcript for b in e.content[:1] if isinstance(b, ContentBlock.TEXT)]


def test_queue_steer_revoke_replace_cancel_and_permission() -> None:
    m = make()
    m.send(m.client.prompt([text("fix the bug")]))
    pending_ids: Dict[str, str] = {}

    def user(tool: int) -> None:
        if tool == 0:
            m.send(m.client.inject(InjectMode.QUEUE, [text("then update the docs")]))
            m.send(m.client.inject(InjectMode.QUEUE, [text("drop this one")]))
            m.send(m.client.inject(InjectMode.QUEUE, [text("draft")]))
            snap = m.client.snapshot()
            for p in snap.pending:
                block = p.content[0]
                assert isinstance(block, ContentBlock.TEXT) and p.message_id is not None
                pending_ids[block.text] = p.message_id
            m.send(m.client.revoke(pending_ids["drop this one"]))
            m.send(m.client.replace(pending_ids["draft"], [text("final wording")]))
        if tool == -1:
            # A steer during the permission prompt is held, not dropped (R-PERM-1).
            m.send(m.client.inject(InjectMode.STEER, [text("use auth_v2")]))

    m.run_turn(during_tool=user)
    assert "use auth_v2" in m.seen_inputs, "the held steer was delivered at the break-point after the decision"
    assert m.seen_inputs.index("use auth_v2") > m.seen_inputs.index("fix the bug")
    # After the turn: the queued messages (not the revoked one, the replaced one with its new text)
    # opened the next turn.
    assert m.seen_inputs[-2:] == ["then update the docs", "final wording"]
    assert "drop this one" not in transcript_texts(m)
    assert m.client.snapshot().state == TurnState.RUNNING
    assert m.client.snapshot().violations == []

    # Cancel with a pending queue inject: the turn ends `cancelled`, the inject survives.
    m.send(m.client.inject(InjectMode.QUEUE, [text("after the cancel")]))
    actions = m.feed(m.core.handle_line("c1", m.client.cancel()))
    assert any(isinstance(a, RuntimeAction.CANCEL_TURN) for a in actions)
    m.event(RuntimeEvent.TURN_ENDED(stop_reason="end_turn", usage_json=None))
    assert m.seen_inputs[-1] == "after the cancel"
    snap = m.client.snapshot()
    assert snap.state == TurnState.RUNNING and snap.pending == []
    texts = transcript_texts(m)
    assert texts.index("fix the bug") < texts.index("use auth_v2") < texts.index("final wording") < texts.index("after the cancel")
