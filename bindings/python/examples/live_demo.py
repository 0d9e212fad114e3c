"""A live session against the reference agent, driven through the Python binding.

    python live_demo.py PATH/TO/acp-inject-agent [--delay-ms 120]

Starts the agent as a subprocess (newline-delimited JSON-RPC over stdio) and plays a user who
prompts, steers mid-turn, queues messages, revokes and replaces one, answers a permission
prompt while a steer waits, revokes too late, and cancels with a message still queued. The
ClientSession (the shared Rust mirror) tracks everything; this script only decides when to
act and prints what happened. It checks that every behaviour really occurred and exits 1
otherwise, so it doubles as an end-to-end test.
"""

from __future__ import annotations

import argparse
import json
import queue
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional

from acp_inject import AcpError, ClientSession, ContentBlock, InjectMode, ItemStatus, TurnState, text


class Demo:
    def __init__(self, agent: str, delay_ms: int) -> None:
        self.proc = subprocess.Popen(
            [agent, "--delay-ms", str(delay_ms), "--tools", "3", "--permission-on-tool", "1"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        )
        self.lines: "queue.Queue[Optional[str]]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.t0 = time.monotonic()
        self.next_id = 1000
        self.session: Optional[ClientSession] = None
        self.session_id = ""
        # Bookkeeping for the narrative and the checks (ids → what the user meant).
        self.label: Dict[str, str] = {}
        self.kind: Dict[str, str] = {}
        self.turn = 0
        self.state = "idle"
        self.permission_open = False
        self.seen: Dict[str, int] = {k: 0 for k in (
            "steer_at_break_point", "queued_after_idle", "revoke_ok", "revoke_too_late",
            "replaced", "cancel_kept_pending", "steer_held_in_permission")}
        self.held_steer: Optional[str] = None
        self.agent_text: Dict[str, str] = {}
        self.last_agent: Optional[str] = None
        self.cancelled_with: List[str] = []
        self.plan: Dict[str, Any] = {}
        self.requests: Dict[Any, Any] = {}
        self.printed: Dict[str, int] = {}

    # ----- plumbing -----
    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def say(self, who: str, what: str) -> None:
        self.flush_agent_text()
        print(f"{time.monotonic() - self.t0:7.2f}s  {who:<10} {what}", flush=True)

    def flush_agent_text(self) -> None:
        if self.last_agent is not None:
            msg, self.last_agent = self.last_agent, None
            new = self.agent_text[msg][self.printed.get(msg, 0):]
            self.printed[msg] = len(self.agent_text[msg])
            print(f"{time.monotonic() - self.t0:7.2f}s  {'agent':<10} says \"{new.strip()}\"", flush=True)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: Dict[str, Any]) -> Dict[str, Any]:
        """A request outside the mirror (initialize, session/new): waits for its answer."""
        self.next_id += 1
        self.send(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}))
        while True:
            line = self.lines.get(timeout=10)
            if line is None:
                raise SystemExit("the agent exited")
            msg = json.loads(line)
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise SystemExit(f"{method} failed: {msg['error']}")
                return msg["result"]  # type: ignore[no-any-return]

    def user(self, kind: str, label: str, line: str, shown: Optional[str] = None) -> None:
        """Sends one of the mirror's request lines and remembers what it was for."""
        self.send(line)
        sent = json.loads(line)
        if "id" in sent:
            self.requests[sent["id"]] = (kind, label)
        self.say("you", f"{kind:<8} " + (shown if shown is not None else f"\"{label}\""))

    # ----- the scenario -----
    def run(self) -> int:
        init = self.request("initialize", {"protocolVersion": 2, "info": {"name": "live-demo", "version": "1"}})
        inject = init["capabilities"]["session"]["inject"]
        self.say("agent", f"initialized: inject modes {inject['modes']}, replace={inject['pending']['replace']}, steerInStream {inject['steerInStream']}")
        self.session_id = self.request("session/new", {"cwd": "/tmp"})["sessionId"]
        self.session = ClientSession.from_initialize_result(self.session_id, json.dumps(init))
        self.say("agent", f"session {self.session_id} created")
        self.prompt("Fix the failing login test")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.05)
            except queue.Empty:
                self.tick()
                continue
            if line is None:
                break
            self.handle(line)
            if self.plan.get("done"):
                break
        self.proc.stdin.close()  # type: ignore[union-attr]
        self.proc.wait(timeout=10)
        return self.summary()

    def prompt(self, words: str) -> None:
        assert self.session
        self.user("prompt", words, self.session.prompt([text(words)]))

    def inject(self, mode: InjectMode, words: str) -> None:
        assert self.session
        self.user(mode.name.lower(), words, self.session.inject(mode, [text(words)]))

    def pending_id(self, words: str) -> Optional[str]:
        return next((i for i, w in self.label.items() if w == words), None)

    def tick(self) -> None:
        """Actions that wait for answers rather than for agent events."""
        assert self.session
        p = self.plan
        if p.get("queued") and not p.get("edited"):
            q2, q3 = self.pending_id("Also bump the version"), self.pending_id("Draft: add a test")
            if q2 and q3:
                p["edited"] = True
                self.user("revoke", "Also bump the version", self.session.revoke(q2), f"\"Also bump the version\" ({q2})")
                new = "Add a regression test for the login bug"
                self.user("replace", new, self.session.replace(q3, [text(new)]), f"\"Draft: add a test\" ({q3}) → \"{new}\"")
                self.label[q3] = "Add a regression test for the login bug"
        if p.get("cancel_after") and self.pending_id("Finally, summarize the changes") and not p.get("cancelled"):
            p["cancelled"] = True
            self.cancelled_with = [i for i, w in self.label.items() if w == "Finally, summarize the changes"]
            self.send(self.session.cancel())
            self.say("you", "cancel   (the queued summary should survive)")
        if self.permission_open and p.get("permission_at") and time.monotonic() - p["permission_at"] > 0.3:
            self.permission_open = False
            self.send(json.dumps({"jsonrpc": "2.0", "id": p["permission_id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}))
            self.say("you", "allow    (permission answered)")

    def handle(self, line: str) -> None:
        assert self.session
        msg = json.loads(line)
        if msg.get("method") == "session/request_permission":
            self.permission_open = True
            self.plan["permission_id"] = msg["id"]
            self.plan["permission_at"] = time.monotonic()
            self.say("agent", f"asks permission: {msg['params']['title']}")
            return
        try:
            self.session.receive(line)
        except AcpError.Protocol as e:
            self.requests.pop(msg.get("id"), None)
            label = self.label.get(e.message_id or "", "")
            self.say("agent", f"error    {e.reason} for \"{label}\" ({e.message_id})")
            if e.reason == "already_delivered":
                self.seen["revoke_too_late"] += 1
        if "id" in msg and msg["id"] in self.requests and "result" in msg:
            op, words = self.requests.pop(msg["id"])
            if op in ("prompt", "queue", "steer"):
                mid = msg["result"]["messageId"]
                self.label[mid], self.kind[mid] = words, op
                self.say("agent", f"accepted \"{words}\" as {mid}" + ("" if self.state == "idle" and op == "prompt" else " (pending)"))
                if op == "steer" and self.permission_open:
                    self.held_steer = mid
            elif op == "revoke":
                self.seen["revoke_ok"] += 1
                self.say("agent", "revoked  (it will never be delivered)")
            elif op == "replace":
                self.seen["replaced"] += 1
                self.say("agent", f"replaced (same id {msg['result']['messageId']}, same place in the queue)")
        update = (msg.get("params") or {}).get("update") or {}
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            mid = update["messageId"]
            if self.last_agent not in (None, mid):
                self.flush_agent_text()
            self.agent_text[mid] = self.agent_text.get(mid, "") + update["content"].get("text", "")
            self.last_agent = mid
            self.on_agent_chunk()
        elif kind == "user_message":
            mid = update["messageId"]
            words = self.label.get(mid, " ".join(b.get("text", "") for b in update.get("content") or []))
            how = self.kind.get(mid, "?")
            if self.state == "running" and how == "steer":
                where = "at a break-point"
                self.seen["steer_at_break_point"] += 1
                if mid == self.held_steer:
                    self.seen["steer_held_in_permission"] += 1
                    where += ", after the permission decision (it was held, not dropped)"
            elif how in ("queue", "prompt") and self.state == "idle" and self.turn > 0:
                where = "after idle, opening the next turn"
                self.seen["queued_after_idle"] += 1
                if mid in self.cancelled_with:
                    self.seen["cancel_kept_pending"] += 1
                    where += " (survived the cancel)"
            else:
                where = "starting the turn"
            self.say("delivered", f"{how:<8} \"{words}\" ({mid}) {where}")
        elif kind in ("state_update", "state_change"):
            state = update.get("state")
            extra = f" ({update['stopReason']})" if state == "idle" else ""
            if state == "running" and self.state == "idle":
                self.turn += 1
                extra = f" (turn {self.turn})"
            self.say("state", f"{state}{extra}")
            self.state = state
            if state == "requires_action" and self.turn == 1 and not self.plan.get("held"):
                self.plan["held"] = True
                self.inject(InjectMode.STEER, "Skip the slow integration tests")
            if state == "idle" and self.turn == 1 and not self.plan.get("late_revoke"):
                # The agent emitted this idle and the queued user_messages together; the mirror
                # has not read them yet, so it still thinks the changelog message is pending.
                self.plan["late_revoke"] = True
                q1 = self.pending_id("Then update the changelog")
                if q1 and self.session.item_status(q1) == ItemStatus.PENDING:
                    self.user("revoke", "Then update the changelog", self.session.revoke(q1),
                              f"\"Then update the changelog\" ({q1}), racing its delivery")
            if state == "idle" and self.turn >= 3:
                self.plan["done"] = True
        elif kind == "tool_call_update" and update.get("title"):
            self.say("agent", f"tool     {update['title']} ({update.get('status')})")
            if self.turn == 1 and not self.plan.get("queued"):
                self.plan["queued"] = True
                self.inject(InjectMode.QUEUE, "Then update the changelog")
                self.inject(InjectMode.QUEUE, "Also bump the version")
                self.inject(InjectMode.QUEUE, "Draft: add a test")

    def on_agent_chunk(self) -> None:
        if self.turn == 1 and not self.plan.get("steered"):
            self.plan["steered"] = True
            self.inject(InjectMode.STEER, "Use the auth_v2 module")
        if self.turn == 2 and not self.plan.get("summary_queued"):
            self.plan["summary_queued"] = True
            self.inject(InjectMode.QUEUE, "Finally, summarize the changes")
            self.plan["cancel_after"] = True

    def summary(self) -> int:
        self.flush_agent_text()
        assert self.session
        snap = self.session.snapshot()
        s = self.seen
        missing = [k for k, v in s.items() if v == 0]
        if snap.violations:
            missing.append(f"violations: {snap.violations}")
        if snap.pending:
            missing.append(f"still pending: {[p.message_id for p in snap.pending]}")
        print()
        print(
            f"summary: {self.turn} turns, {sum(1 for e in snap.transcript if e.role.name == 'USER')} user messages in history; "
            f"{s['steer_at_break_point']} steer(s) delivered at break-points ({s['steer_held_in_permission']} held through a permission prompt), "
            f"{s['queued_after_idle']} queued delivered after idle ({s['cancel_kept_pending']} survived a cancel), "
            f"{s['revoke_ok']} revoked, {s['revoke_too_late']} revoke answered already_delivered, {s['replaced']} replaced, "
            f"{len(snap.violations)} violations"
            + ("" if not missing else f" — MISSING: {', '.join(missing)}")
        )
        return 0 if not missing else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("agent", help="path to the acp-inject-agent binary")
    ap.add_argument("--delay-ms", type=int, default=120)
    args = ap.parse_args()
    return Demo(args.agent, args.delay_ms).run()


if __name__ == "__main__":
    sys.exit(main())
