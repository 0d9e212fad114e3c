"""The test of the side-by-side Python examples (not one of them): each client against each
agent over stdio, its output checked; both agents cancelled mid-turn by a plain ACP v1 client
written here; and the line counts in ``side-by-side/README.md`` and the top-level README equal
the files' own. Exits non-zero when anything fails. ``cargo xtask test --stage interop`` runs it.

    python check.py --official-python PY --ours-python PY

``--official-python``: an interpreter with the official SDK (``agent-client-protocol``, as
``interop/python-sdk/requirements.txt`` pins it); ``--ours-python``: one with ``acp_inject``.
Only the standard library is used here, so either interpreter can run it.

Code lines, as the READMEs count them. Python: the physical lines that hold a Python token
other than a comment, a line break or indentation, less the lines of docstrings (a string
literal that is the first statement of the module, a class or a function); a statement spread
over several lines counts each of them. Kotlin and Swift: the lines that are neither blank nor
comments (``//`` lines and ``/* */`` blocks). Every file a README table cell names is counted,
whichever language.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import io
import json
import re
import sys
import time
import tokenize
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TIMEOUT = 60.0
EXAMPLES = ["official_client.py", "ours_client.py", "official_agent.py", "ours_agent.py"]
STOP = re.compile(r"^stop reason: (end_turn)$", re.MULTILINE)


def code_lines(path: Path) -> int:
    if path.suffix != ".py":
        return c_like_code_lines(path)
    source = path.read_text()
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    layout = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in layout:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


def c_like_code_lines(path: Path) -> int:
    """Kotlin and Swift: lines neither blank nor comment (a ``//`` line, or inside ``/* */``)."""
    count, in_block = 0, False
    for line in path.read_text().splitlines():
        text = line.strip()
        if in_block:
            in_block = "*/" not in text
            continue
        if not text or text.startswith("//"):
            continue
        if text.startswith("/*"):
            in_block = "*/" not in text
            continue
        count += 1
    return count


class Checks:
    def __init__(self) -> None:
        self.failed: list[str] = []

    def expect(self, ok: bool, what: str) -> None:
        print(("  ok    " if ok else "  FAIL  ") + what, flush=True)
        if not ok:
            self.failed.append(what)


async def run(command: list[str]) -> tuple[int | None, str, str]:
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=HERE,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), TIMEOUT)
    except asyncio.TimeoutError:
        process.kill()
        out, err = await process.communicate()
        return None, out.decode(), err.decode() + f"\n(killed after {TIMEOUT:.0f} s)"
    return process.returncode, out.decode(), err.decode()


def in_order(text: str, *parts: str) -> bool:
    at = 0
    for part in parts:
        found = text.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


def without_permissions(out: str) -> str:
    """The output without the permission lines: our client's handler runs as the request
    arrives, so its line may land between two chunks that the event loop prints later."""
    return re.sub(r"\n\[permission\][^\n]*\n", "", out)


def check_common(c: Checks, name: str, out: str) -> None:
    """What every client does against every agent: the reply, the permission, the stop reason."""
    c.expect(
        "you said: hello there" in without_permissions(out), f'{name}: the reply streamed ("you said: hello there")'
    )
    c.expect("[permission] Run the tests? Allow" in out, f"{name}: the permission request was answered with Allow")
    tool_done = re.search(r"^\[tool\] (completed)$", out, re.MULTILINE)
    c.expect(tool_done is not None, f"{name}: the tool call was updated to completed")
    first = STOP.search(out)
    c.expect(first is not None, f"{name}: the turn ended end_turn")


def check_ours_client(c: Checks, name: str, out: str, v1_agent: bool) -> None:
    """What only our client does: steer, queue, replace and revoke during the turn."""
    out = without_permissions(out)
    stops = [m.start() for m in STOP.finditer(out)]
    first_turn = out[: stops[0]] if stops else out
    later = out[stops[0] :] if stops else ""
    c.expect("[queue pending] and thanks" in first_turn, f"{name}: the draft was replaced while pending")
    c.expect("[queue revoked] never mind" in first_turn, f"{name}: the revoked message is revoked")
    for gone in ("never mind", "draft"):
        c.expect(
            f"delivered] {gone}" not in out and f"you said: {gone}" not in out, f"{name}: {gone!r} never delivered"
        )
    if v1_agent:
        # No session/inject: the client holds the queue (the steer falls back to it) and sends
        # each message as a prompt of its own after the turn, in order.
        c.expect(
            in_order(
                later,
                "[queue delivered] keep it short",
                "you said: keep it short",
                "[queue delivered] now say goodbye",
                "you said: now say goodbye",
                "[queue delivered] and thanks",
                "you said: and thanks",
            ),
            f"{name}: the held steer and queue went out one prompt each, in order, after the turn",
        )
        c.expect(len(stops) == 4, f"{name}: four turns ended end_turn ({len(stops)})")
    else:
        c.expect(
            in_order(
                first_turn, "you said: hello there", "[steer delivered] keep it short", "(steered: keep it short)"
            ),
            f"{name}: the steer was delivered inside the turn and read by the agent",
        )
        c.expect(
            in_order(
                later,
                "[queue delivered] now say goodbye",
                "[queue delivered] and thanks",
                "you said: now say goodbye / and thanks",
            ),
            f"{name}: the queue opened the next turn with the follow-up and the replaced text",
        )
        c.expect(len(stops) == 2, f"{name}: two turns ended end_turn ({len(stops)})")


async def cancel_mid_turn(agent: list[str]) -> str:
    """A plain ACP v1 client over stdio: initialize, session/new, a prompt, session/cancel on the
    first chunk; returns the prompt's stop reason."""
    process = await asyncio.create_subprocess_exec(
        *agent,
        cwd=HERE,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None

    def send(message: dict) -> None:
        assert process.stdin is not None
        process.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())

    async def answer(id: int) -> dict:
        assert process.stdout is not None
        while True:
            message = json.loads(await process.stdout.readline() or b"null")
            if message is None:
                raise RuntimeError("the agent closed its output")
            if (
                message.get("method") == "session/update"
                and message["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            ):
                send({"method": "session/cancel", "params": {"sessionId": message["params"]["sessionId"]}})
            elif message.get("method") == "session/request_permission":
                send({"id": message["id"], "result": {"outcome": {"outcome": "cancelled"}}})
            elif message.get("id") == id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"request {id} failed: {message['error']}")
                return message["result"]

    try:
        send({"id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})
        await answer(1)
        send({"id": 2, "method": "session/new", "params": {"cwd": str(HERE), "mcpServers": []}})
        session = (await answer(2))["sessionId"]
        send(
            {
                "id": 3,
                "method": "session/prompt",
                "params": {"sessionId": session, "prompt": [{"type": "text", "text": "a long task"}]},
            }
        )
        return str((await asyncio.wait_for(answer(3), TIMEOUT))["stopReason"])
    finally:
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except asyncio.TimeoutError:
            process.kill()


def check_tables(c: Checks) -> None:
    """Every `N ([file](path))` cell of the two READMEs names the file's code lines, and both
    tables name each Python example."""
    for readme in (ROOT / "side-by-side/README.md", ROOT / "README.md"):
        cells = re.findall(r"(\d+) \(\[[^\]]+\]\(([^)#]+\.(?:py|kt|swift))\)\)", readme.read_text())
        named = {(readme.parent / path).resolve(): int(n) for n, path in cells}
        for name in EXAMPLES:
            c.expect(HERE / name in named, f"{readme.relative_to(ROOT)}: the table names {name}")
        for path, stated in named.items():
            actual = code_lines(path) if path.is_file() else None
            c.expect(
                stated == actual,
                f"{readme.relative_to(ROOT)}: {path.relative_to(ROOT)} has {actual} code lines (the table says {stated})",
            )


async def main(official: str, ours: str) -> int:
    c = Checks()
    started = time.monotonic()
    print("code lines:", ", ".join(f"{n} {code_lines(HERE / n)}" for n in EXAMPLES), flush=True)
    check_tables(c)
    agents = {"official agent": [official, "official_agent.py"], "our agent": [ours, "ours_agent.py"]}
    clients = {"official client": [official, "official_client.py"], "our client": [ours, "ours_client.py"]}
    for client, agent in [(client, agent) for client in clients for agent in agents]:
        name = f"{client} -> {agent}"
        status, out, err = await run(clients[client] + agents[agent])
        print(f"\n--- {name}: exit {status}\n{out.rstrip()}", flush=True)
        if err.strip():
            print(f"--- its stderr:\n{err.rstrip()}", flush=True)
        c.expect(status == 0, f"{name}: exit status 0")
        check_common(c, name, out)
        if client == "our client":
            check_ours_client(c, name, out, v1_agent=agent == "official agent")
    print(flush=True)
    for agent, command in agents.items():
        try:
            reason = await cancel_mid_turn(command)
        except Exception as e:  # noqa: BLE001 - any failure is this check's
            reason = f"failed: {e!r}"
        c.expect(reason == "cancelled", f"{agent}: session/cancel mid-turn ends the prompt cancelled ({reason})")
    verdict = f"{len(c.failed)} check(s) failed" if c.failed else "every check passed"
    print(f"\nside-by-side Python: {verdict} in {time.monotonic() - started:.1f} s", flush=True)
    return 1 if c.failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official-python", required=True, help="an interpreter with the official SDK installed")
    parser.add_argument("--ours-python", required=True, help="an interpreter with acp_inject installed")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.official_python, args.ours_python)))
