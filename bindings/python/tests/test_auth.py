"""Authentication and extension methods served by a Python agent (spec/rules.md R-AUTH-*,
R-EXT-2): the example agent requiring an API key, driven by a raw ACP v1 client (as an editor
speaking v1 would) and by our client; and an agent serving extension methods."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

import acp_inject as acp
from acp_inject import AcpError

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "agent.py"
TIMEOUT = 30.0


class V1Client:
    """A line-by-line ACP v1 client over the agent's stdio: it allows every permission the
    agent asks for, and gives up on an answer after ``TIMEOUT`` seconds."""

    def __init__(self, env: Dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(EXAMPLE), "--require-api-key", "--delay-ms", "1"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        self.next_id = 0
        self.lines: "queue.Queue[str]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def _send(self, message: Dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: Dict[str, Any]) -> Dict[str, Any]:
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = json.loads(self.lines.get(timeout=TIMEOUT))
            if message.get("method") == "session/request_permission":
                option = message["params"]["options"][0]["optionId"]
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": {"outcome": "selected", "optionId": option}}})
            elif message.get("id") == self.next_id and "method" not in message:
                return message  # type: ignore[no-any-return]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(TIMEOUT)


def environment(key: Optional[str]) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ACP_EXAMPLE_API_KEY"}
    if key is not None:
        env["ACP_EXAMPLE_API_KEY"] = key
    return env


def test_a_v1_client_authenticates_with_the_example_agent() -> None:
    cwd = tempfile.gettempdir()
    # Without the key in the agent's environment: advertised, required, and refused.
    client = V1Client(environment(None))
    try:
        init = client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert init["result"]["protocolVersion"] == 1
        assert init["result"]["authMethods"] == [
            {"id": "api-key", "name": "API key", "description": "ACP_EXAMPLE_API_KEY in the agent's environment"}
        ]
        refused = client.request("session/new", {"cwd": cwd, "mcpServers": []})
        assert refused["error"]["code"] == -32000 and refused["error"]["message"] == "Authentication required"
        login = client.request("authenticate", {"methodId": "api-key"})
        assert login["error"]["code"] == -32000 and login["error"]["data"]["detail"] == "set ACP_EXAMPLE_API_KEY"
        unknown = client.request("authenticate", {"methodId": "password"})
        assert unknown["error"]["code"] == -32602
    finally:
        client.close()
    # With it: the login succeeds, then the session and a prompt are served.
    client = V1Client(environment("sk-test"))
    try:
        client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert client.request("authenticate", {"methodId": "api-key"}) == {"jsonrpc": "2.0", "id": 2, "result": {}}
        session = client.request("session/new", {"cwd": cwd, "mcpServers": []})["result"]["sessionId"]
        answer = client.request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]})
        assert answer["result"]["stopReason"] == "end_turn"
    finally:
        client.close()


def test_our_client_logs_in_then_opens_a_session() -> None:
    async def run() -> None:
        env_before = os.environ.get("ACP_EXAMPLE_API_KEY")
        os.environ["ACP_EXAMPLE_API_KEY"] = "sk-test"
        try:
            async with acp.connect([sys.executable, str(EXAMPLE), "--require-api-key", "--delay-ms", "1"]) as client:
                (method,) = client.auth_methods
                assert isinstance(method, acp.AuthMethodAgent) and method.method_id == "api-key"
                with pytest.raises(AcpError.AuthRequired):
                    await client.new_session(tempfile.gettempdir())
                await client.authenticate("api-key")
                session = await client.new_session(tempfile.gettempdir())
                assert session.id
                await client.logout()
                with pytest.raises(AcpError.AuthRequired):
                    await client.new_session(tempfile.gettempdir())
        finally:
            if env_before is None:
                os.environ.pop("ACP_EXAMPLE_API_KEY", None)
            else:
                os.environ["ACP_EXAMPLE_API_KEY"] = env_before

    asyncio.run(run())


class Usage(acp.Agent):
    """Serves `_acme/usage` and hears `_acme/ping`."""

    def __init__(self) -> None:
        self.pings: List[Any] = []
        self.pinged = asyncio.Event()

    async def run(self, turn: acp.Turn, messages: List[acp.UserInput]) -> None:
        turn.say("ok")

    async def extension(self, method: str, params: Any) -> Any:
        if params == {"nothing": True}:
            return None  # a `null` result
        if params is None or "period" not in params:
            raise acp.refused(-32602, "Invalid params", "a period is needed")
        return {"method": method, "period": params["period"], "tokens": [1, 2.5, None]}

    async def extension_notification(self, method: str, params: Any) -> None:
        self.pings.append((method, params))
        self.pinged.set()


def test_a_python_agent_serves_extension_methods() -> None:
    async def run() -> None:
        agent = Usage()
        config = acp.agent_config("usage", extensions=["_acme/usage", "_acme/ping"])
        async with await acp.listen(agent, "127.0.0.1:0", config=config) as listening:
            async with acp.connect(listening.url) as client:
                answer = await client.ext_request("_acme/usage", {"period": "day"})
                assert answer == {"method": "_acme/usage", "period": "day", "tokens": [1, 2.5, None]}
                assert await asyncio.wait_for(client.ext_request("_acme/usage", {"nothing": True}), TIMEOUT) is None
                with pytest.raises(AcpError.Protocol) as bad:
                    await client.ext_request("_acme/usage", {})
                assert bad.value.error.code == -32602 and bad.value.error.detail == "a period is needed"
                with pytest.raises(AcpError.Protocol) as missing:
                    await client.ext_request("_acme/other")
                assert missing.value.error.code == -32601
                client.ext_notify("_acme/ping", {"at": 1})
                await asyncio.wait_for(agent.pinged.wait(), TIMEOUT)
                assert agent.pings == [("_acme/ping", {"at": 1})]

    asyncio.run(run())
