"""An ACP v2 agent with session/inject written from the rules alone, in plain Python: asyncio
and the standard library, nothing of acp-inject. The tests run the example client against it,
so the client is shown to work with an agent that shares no code with this toolkit.

    python plain_agent.py [--delay-ms 20] [--no-inject] [--permission]

Each turn streams two agent message chunks, then runs two tool calls; each tool result is a
break-point where every pending steer is delivered (its ``user_message``). With
``--permission`` the second tool asks ``session/request_permission`` first. Queued injects
wait for the turn end and open the next turn (steers first, then queued, each in order).
Revoke and replace work on pending injects; cancel ends the turn ``cancelled`` and keeps the
pending injects; close drops them. ``--no-inject`` advertises no inject (the inject methods
are then unknown methods).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

Json = Dict[str, Any]

NOT_FOUND, PRECONDITION, NO_METHOD, BAD_PARAMS, PARSE, BAD_REQUEST = -32002, -32010, -32601, -32602, -32700, -32600
MESSAGES = {
    NOT_FOUND: "Resource not found",
    PRECONDITION: "Inject precondition failed",
    NO_METHOD: "Method not found",
    BAD_PARAMS: "Invalid params",
    PARSE: "Parse error",
    BAD_REQUEST: "Invalid request",
}


class Refused(Exception):
    def __init__(self, code: int, reason: Optional[str] = None, message_id: Optional[str] = None) -> None:
        super().__init__(code, reason)
        self.code, self.reason, self.message_id = code, reason, message_id

    def error(self) -> Json:
        err: Json = {"code": self.code, "message": MESSAGES[self.code]}
        if self.reason is not None:
            err["data"] = {"reason": self.reason}
            if self.message_id is not None:
                err["data"]["messageId"] = self.message_id
        return err


@dataclass
class Pending:
    message_id: str
    mode: str
    content: List[Json]


@dataclass
class PlainSession:
    id: str
    cwd: str
    running: bool = False
    cancelled: bool = False
    steers: List[Pending] = field(default_factory=list)
    queued: List[Pending] = field(default_factory=list)
    revoked: Set[str] = field(default_factory=set)
    delivered: Set[str] = field(default_factory=set)
    task: Optional["asyncio.Task[None]"] = None
    turns: int = 0


class PlainAgent:
    def __init__(self, delay: float, inject: bool, permission: bool) -> None:
        self.delay, self.inject, self.permission = delay, inject, permission
        self.sessions: Dict[str, PlainSession] = {}
        self.ids = 0
        self.requests = 0
        self.answers: Dict[int, "asyncio.Future[Json]"] = {}
        # What a request causes after its answer (upstream order: the answer, then the
        # user_message, then state_update running).
        self.after: List[Callable[[], None]] = []

    # ----- output -----

    def send(self, message: Json) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def update(self, session: PlainSession, update: Json) -> None:
        self.send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session.id, "update": update}})

    def mint(self, prefix: str) -> str:
        self.ids += 1
        return f"{prefix}{self.ids}"

    def user_message(self, session: PlainSession, item: Pending) -> None:
        session.delivered.add(item.message_id)
        self.update(session, {"sessionUpdate": "user_message", "messageId": item.message_id, "content": item.content})

    def state(self, session: PlainSession, state: str, stop_reason: Optional[str] = None) -> None:
        update: Json = {"sessionUpdate": "state_update", "state": state}
        if stop_reason is not None:
            update["stopReason"] = stop_reason
        self.update(session, update)

    # ----- turns -----

    def start_turn(self, session: PlainSession, opening: List[Pending]) -> None:
        for item in opening:
            self.user_message(session, item)
        session.running, session.cancelled = True, False
        session.turns += 1
        self.state(session, "running")
        session.task = asyncio.ensure_future(self.run_turn(session, [i.content for i in opening]))

    async def pause(self, session: PlainSession) -> bool:
        """Waits one step; False once the turn is cancelled."""
        await asyncio.sleep(self.delay)
        return not session.cancelled

    async def run_turn(self, session: PlainSession, opening: List[List[Json]]) -> None:
        turn = session.turns
        message = self.mint("plain_agent_")
        for words in ("Working on it. ", f"({len(opening)} message(s) in). "):
            if not await self.pause(session):
                return self.end_turn(session, "cancelled")
            self.update(session, {"sessionUpdate": "agent_message_chunk", "messageId": message, "content": {"type": "text", "text": words}})
        for tool in (1, 2):
            call = f"plain_call_{session.id}_{turn}_{tool}"
            self.update(session, {"sessionUpdate": "tool_call_update", "toolCallId": call, "title": f"step {tool}", "kind": "execute", "status": "pending"})
            if tool == 2 and self.permission:
                self.state(session, "requires_action")
                allowed = await self.ask_permission(session, call)
                if session.cancelled:
                    return self.end_turn(session, "cancelled")
                self.state(session, "running")
                if not allowed:
                    self.update(session, {"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "failed"})
                    continue
            if not await self.pause(session):
                return self.end_turn(session, "cancelled")
            self.update(session, {"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "completed",
                                  "content": [{"type": "content", "content": {"type": "text", "text": f"step {tool} done"}}]})
            # A tool result: the safe break-point where every pending steer is delivered.
            steers, session.steers = session.steers, []
            for item in steers:
                self.user_message(session, item)
        if not await self.pause(session):
            return self.end_turn(session, "cancelled")
        self.update(session, {"sessionUpdate": "agent_message_chunk", "messageId": message, "content": {"type": "text", "text": "Done."}})
        self.end_turn(session, "end_turn")

    async def ask_permission(self, session: PlainSession, call: str) -> bool:
        self.requests += 1
        request = self.requests
        waiter: "asyncio.Future[Json]" = asyncio.get_running_loop().create_future()
        self.answers[request] = waiter
        self.send({"jsonrpc": "2.0", "id": request, "method": "session/request_permission", "params": {
            "sessionId": session.id, "title": f"Run {call}?",
            "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"}, {"optionId": "no", "name": "Reject", "kind": "reject_once"}]}})
        while not waiter.done() and not session.cancelled:
            await asyncio.sleep(0.005)
        if not waiter.done():
            return False
        outcome = waiter.result().get("outcome", {})
        return bool(outcome.get("outcome") == "selected" and outcome.get("optionId") == "yes")

    def end_turn(self, session: PlainSession, stop_reason: str) -> None:
        if not session.running:
            return
        session.running, session.task = False, None
        self.state(session, "idle", "cancelled" if session.cancelled else stop_reason)
        opening = session.steers + session.queued
        session.steers, session.queued = [], []
        if opening:
            self.start_turn(session, opening)

    # ----- requests -----

    def session(self, params: Json) -> PlainSession:
        sid = params.get("sessionId")
        if not isinstance(sid, str):
            raise Refused(BAD_PARAMS)
        s = self.sessions.get(sid)
        if s is None:
            raise Refused(NOT_FOUND, "session_not_found")
        return s

    @staticmethod
    def content(params: Json, key: str) -> List[Json]:
        content = params.get(key)
        if not isinstance(content, list) or not content or not all(isinstance(b, dict) and "type" in b for b in content):
            raise Refused(BAD_PARAMS)
        return content

    def find(self, session: PlainSession, message_id: Any) -> Tuple[Optional[List[Pending]], Optional[Pending]]:
        for waiting in (session.steers, session.queued):
            for item in waiting:
                if item.message_id == message_id:
                    return waiting, item
        return None, None

    def handle(self, method: str, params: Json) -> Json:
        if method == "initialize":
            session_caps: Json = {"status": {}}
            if self.inject:
                session_caps["inject"] = {"modes": ["queue", "steer"], "pending": {"replace": True}, "steerInStream": ["finish"]}
            return {"protocolVersion": 2, "info": {"name": "plain-python-agent", "version": "1.0.0"}, "capabilities": {"session": session_caps}}
        if method == "session/new":
            cwd = params.get("cwd")
            if not isinstance(cwd, str) or not cwd.startswith("/"):
                raise Refused(BAD_PARAMS)
            sid = self.mint("plain_session_")
            self.sessions[sid] = PlainSession(sid, cwd)
            return {"sessionId": sid}
        if method == "session/status":
            live = params.get("sessionId") in self.sessions
            return {"status": "open" if live else "saved"}
        if method == "session/close":
            s = self.session(params)
            if s.running:
                s.cancelled = True
                if s.task is not None:
                    s.task.cancel()
                s.running, s.task = False, None
                self.state(s, "idle", "cancelled")
            del self.sessions[s.id]
            return {}
        if method == "session/prompt":
            s = self.session(params)
            content = self.content(params, "prompt")
            if s.running:
                raise Refused(PRECONDITION, "turn_in_progress")
            item = Pending(self.mint("plain_msg_"), "prompt", content)
            s.running = True  # from now on, for the requests that follow
            self.after.append(lambda: self.start_turn(s, [item]))
            return {"messageId": item.message_id}
        if not self.inject or method not in ("session/inject", "session/revoke_inject", "session/replace_inject"):
            raise Refused(NO_METHOD)
        s = self.session(params)
        if method == "session/inject":
            mode = params.get("mode")
            if mode not in ("queue", "steer"):
                raise Refused(BAD_PARAMS)
            content = self.content(params, "content")
            if mode == "steer" and not s.running:
                raise Refused(PRECONDITION, "no_running_turn")
            item = Pending(self.mint("plain_msg_"), mode, content)
            if not s.running:  # a queue inject on an idle session starts a turn
                s.running = True
                self.after.append(lambda: self.start_turn(s, [item]))
            else:
                (s.steers if mode == "steer" else s.queued).append(item)
            return {"messageId": item.message_id}
        message_id = params.get("messageId")
        if not isinstance(message_id, str):
            raise Refused(BAD_PARAMS)
        waiting, found = self.find(s, message_id)
        if method == "session/revoke_inject":
            if waiting is not None and found is not None:
                waiting.remove(found)
                s.revoked.add(message_id)
                return {}
            if message_id in s.revoked:
                return {}
        else:
            content = self.content(params, "content")
            if found is not None:
                found.content = content
                return {"messageId": message_id}
        if message_id in s.delivered:
            raise Refused(PRECONDITION, "already_delivered", message_id)
        raise Refused(NOT_FOUND, "unknown_message_id", message_id)

    def receive(self, line: str) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return self.send({"jsonrpc": "2.0", "id": None, "error": Refused(PARSE).error()})
        if not isinstance(message, dict):
            return self.send({"jsonrpc": "2.0", "id": None, "error": Refused(BAD_REQUEST).error()})
        method, request = message.get("method"), message.get("id")
        if method is None:  # an answer to one of our requests
            waiter = self.answers.pop(request, None) if isinstance(request, int) else None
            if waiter is not None and not waiter.done():
                waiter.set_result(message.get("result") or {})
            return
        params = message.get("params") or {}
        if "id" not in message:  # a notification
            if method == "session/cancel":
                s = self.sessions.get(str(params.get("sessionId")))
                if s is not None and s.running:
                    s.cancelled = True
            return
        try:
            result = self.handle(str(method), params if isinstance(params, dict) else {})
            self.send({"jsonrpc": "2.0", "id": request, "result": result})
        except Refused as refused:
            self.send({"jsonrpc": "2.0", "id": request, "error": refused.error()})
        after, self.after = self.after, []
        for step in after:
            step()

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 24)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while True:
            line = await reader.readline()
            if not line:
                return
            if line.strip():
                self.receive(line.decode("utf-8", errors="replace"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--delay-ms", type=int, default=20)
    parser.add_argument("--no-inject", action="store_true", help="advertise no session/inject")
    parser.add_argument("--permission", action="store_true", help="ask permission before the second tool")
    args = parser.parse_args()
    asyncio.run(PlainAgent(args.delay_ms / 1000, not args.no_inject, args.permission).serve())


if __name__ == "__main__":
    main()
