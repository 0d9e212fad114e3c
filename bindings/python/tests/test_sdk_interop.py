"""The client against an agent written with the official TypeScript SDK that requires
authentication and serves an extension method (interop/typescript-sdk/sdk-agent.mjs
--require-auth). Runs in the interop stage, which installs the SDK and sets
ACP_INJECT_SDK_AGENT to the script; skipped elsewhere."""

from __future__ import annotations

import asyncio
import os
import tempfile

import pytest

import acp_inject as acp

AGENT = os.environ.get("ACP_INJECT_SDK_AGENT")
pytestmark = pytest.mark.skipif(not AGENT, reason="ACP_INJECT_SDK_AGENT names the SDK agent (the interop stage sets it)")


def test_authenticates_then_opens_a_session_and_reaches_the_agents_extensions() -> None:
    async def run() -> None:
        assert AGENT is not None
        async with acp.connect(["node", AGENT, "--require-auth", "--delay-ms", "5"]) as client:
            (method,) = client.auth_methods
            assert isinstance(method, acp.AuthMethodAgent) and method.method_id == "api-key"
            with pytest.raises(acp.AcpError.AuthRequired) as refused:
                await client.new_session(tempfile.gettempdir())
            assert refused.value.error.code == -32000
            assert "Authentication required" in str(refused.value)
            with pytest.raises(acp.AcpError.Rejected) as unknown:
                await client.authenticate("password")
            assert unknown.value.reason == acp.CallRejected.INVALID_ARGUMENTS
            await client.authenticate("api-key")
            notification = await asyncio.wait_for(client.next_notification(), 10)
            assert notification == acp.Notification(method="_interop/auth_status", params={"state": "authenticated"})
            session = await client.new_session(tempfile.gettempdir())
            turn = await session.prompt("hello")
            assert turn.message_id is not None
            # An extension request and its JSON result; a method that is not an extension's is
            # refused locally; one the agent does not serve is its -32601.
            assert await client.ext_request("_interop/echo", {"list": [1, 2.5, None, "x"]}) == {"echo": {"list": [1, 2.5, None, "x"]}}
            with pytest.raises(acp.AcpError.Rejected):
                await client.ext_request("session/new", {})
            with pytest.raises(acp.AcpError.Protocol) as missing:
                await client.ext_request("_interop/missing")
            assert missing.value.error.code == -32601
            client.ext_notify("_interop/ping", {"at": 1})
            session.cancel()
            await client.logout()

    asyncio.run(run())
