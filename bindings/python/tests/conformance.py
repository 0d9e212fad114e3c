"""Replays conformance vectors through the Python binding (``python -m tests.conformance DIR…``,
from ``bindings/python``, with the test package installed).

This is a driver, not an engine: it performs each step on :class:`AgentCore` or
:class:`ClientCore` exactly as a Python host would, and hands what came out to the shared
Rust engine (``VectorRun``), which owns the vector format and the comparison. A passing vector
proves the behaviour survives the FFI boundary. Directories come from the command line or, when
none is given, ``ACP_INJECT_VECTORS`` (``os.pathsep``-separated). Prints ``N passed, N failed``
and each failure's first mismatch.

The engine is a test-only UniFFI component (``crates/ffi-conformance``): the shipped wheel does
not have it, the test package (``bindings/python/test-package``, what ``cargo xtask test``
installs) has it beside the shipped binding. This driver is therefore part of the tests, not of
the package.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from acp_inject import AcpError, AgentCore, AgentConfig, ClientCore, ConnectionRole, Output, SteerFallback
from acp_inject.values import CallRejected, ContentBlock, InitializeResponse, InjectMode, RuntimeEvent, TurnFailure, decode, encode

try:
    from acp_inject.acp_inject_ffi import acp_inject_ffi_conformance as _component
except ImportError as e:  # the shipped package: no conformance engine
    raise ImportError(
        "the tests need the test package (the shipped one plus the conformance engine): "
        "`pip install bindings/python/test-package[test]`, which `cargo xtask test --stage python` runs"
    ) from e
from acp_inject.acp_inject_ffi import acp_inject_ffi as _ffi

ClientCall = _component.ClientCall
Instruction = _component.Instruction
Side = _component.Side


class VectorRun:
    """The engine's ``VectorRun``, with its errors raised as ``AcpError`` and the values it takes
    and gives in the package's own types (encoded and decoded by the package's codec)."""

    def __init__(self, text: str) -> None:
        self._run = self._call(_component.VectorRun, text)

    @staticmethod
    def _call(fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except _ffi.FfiError.Failed as e:
            from acp_inject.values import decode_error

            raise decode_error(e.error) from None

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._run, name)
        return lambda *args: self._call(method, *args)



_KEY = re.compile(r'"idempotencyKey":"[^"]*"')


def _without_keys(lines: List[str]) -> List[str]:
    """The lines with their idempotency keys masked: each client draws fresh random keys
    (C-IDEM-1), so the twins agree on everything else."""
    return [_KEY.sub('"idempotencyKey":"…"', line) for line in lines]

def _attached(core: AgentCore) -> Dict[str, List[str]]:
    return {s: core.attached(s) for s in core.session_ids()}


def _drive_agent(run: VectorRun) -> None:
    setup = run.agent_setup()
    assert setup is not None
    core = AgentCore(decode(AgentConfig, setup.config))
    core.create_session(setup.session, setup.cwd)
    for c in setup.connections:
        core.attach(c.id, decode(ConnectionRole, c.role), c.principal)
        if c.joined:
            core.attach_to_session(c.id, setup.session)
    outputs: List[Output] = []
    while (step := run.next()) is not None:
        if isinstance(step, Instruction.CLIENT_LINE):
            outputs += core.handle_line(step.connection, step.line)
        elif isinstance(step, Instruction.RUNTIME):
            try:
                outputs += core.runtime_event(step.session, decode(RuntimeEvent, step.event))
                run.record_runtime_result(encode(None))
            except AcpError.Host as e:
                run.record_runtime_result(encode(e.error))
        elif isinstance(step, Instruction.EXPECT):
            run.check_outputs(encode(outputs), _attached(core))
            outputs = []
        elif isinstance(step, Instruction.EXPECT_HISTORY):
            run.check_history(encode(core.history(step.session)))
        elif isinstance(step, Instruction.ANSWER_CALL):
            try:
                if step.error:
                    outputs += core.refuse_call(step.id, decode(TurnFailure, step.error))
                else:
                    outputs += core.answer_call(step.id, decode(Any, step.result))
                run.record_runtime_result(encode(None))
            except AcpError.Host as e:
                run.record_runtime_result(encode(e.error))
        else:
            raise AcpError.Mismatch(detail=f"an agent-side vector has a client-side step: {step}")
    run.check_outputs(encode(outputs), _attached(core))


def _content(data: bytes) -> List[ContentBlock]:
    return decode(List[ContentBlock], data)  # type: ignore[no-any-return]


def _call(client: ClientCore, call: object) -> None:
    if isinstance(call, ClientCall.PROMPT):
        client.prompt(call.session, _content(call.content))
    elif isinstance(call, ClientCall.INJECT):
        client.inject(call.session, decode(InjectMode, call.mode), _content(call.content))
    elif isinstance(call, ClientCall.REVOKE):
        client.revoke(call.session, call.message_id)
    elif isinstance(call, ClientCall.REPLACE):
        client.replace(call.session, call.message_id, _content(call.content))
    elif isinstance(call, ClientCall.CANCEL):
        client.cancel(call.session)
    elif isinstance(call, ClientCall.STATUS):
        client.status(call.session)
    elif isinstance(call, ClientCall.CLOSE):
        client.close(call.session)
    elif isinstance(call, ClientCall.RESUME):
        client.resume(call.session, call.cwd, call.replay)


def _drive_client(run: VectorRun) -> None:
    setup = run.client_setup()
    assert setup is not None
    # Two connections fed the same lines, one through UniFFI's `receive`, one through
    # `receive_line` (the per-line path): they must agree on every event and every state.
    client = ClientCore(16 << 20)
    lined = ClientCore(16 << 20)
    for c in (client, lined):
        c.assume_initialized(decode(InitializeResponse, setup.agent))
        c.set_steer_fallback(decode(Optional[SteerFallback], setup.steer_fallback))
        c.open_session(setup.session, None)
    while (step := run.next()) is not None:
        if isinstance(step, Instruction.CALL):
            rejected: Optional[CallRejected] = None
            try:
                _call(client, step.call)
            except AcpError.Rejected as e:
                rejected = e.reason
            try:
                _call(lined, step.call)
            except AcpError.Rejected:
                pass
            sent = client.take_outgoing()
            lined_sent = lined.take_outgoing()
            if _without_keys(lined_sent) != _without_keys(sent):
                raise AcpError.Mismatch(detail=f"receive_line's twin sent {lined_sent!r}, receive's {sent!r}")
            client.take_events()
            lined.take_events()
            run.check_call(encode(rejected), sent)
        elif isinstance(step, Instruction.RECEIVE):
            events = client.receive(step.line)
            by_line = lined.receive_line(step.line)
            if by_line != events:
                raise AcpError.Mismatch(detail=f"receive_line gave {by_line!r}, receive gave {events!r}")
            run.record_events(encode(events))
        elif isinstance(step, Instruction.EXPECT_STATE):
            if lined.snapshot(step.session) != client.snapshot(step.session):
                raise AcpError.Mismatch(detail="receive_line's twin is in another state than receive's")
            run.check_state(encode(client.snapshot(step.session)))
        elif isinstance(step, Instruction.EXPECT_SENT):
            sent = client.take_outgoing()
            if _without_keys(lined.take_outgoing()) != _without_keys(sent):
                raise AcpError.Mismatch(detail="receive_line's twin sent other lines than receive's")
            run.check_sent(sent)
        elif isinstance(step, Instruction.EXPECT_ITEM):
            run.check_item(encode(client.item_status(step.session, step.message_id)))
        else:
            raise AcpError.Mismatch(detail=f"a client-side vector has an agent-side step: {step}")


def run_text(text: str) -> Tuple[str, Optional[str]]:
    """Replays one vector; returns its name and the first mismatch (``None`` when it passed)."""
    try:
        run = VectorRun(text)
    except AcpError as e:
        return "(unreadable)", str(e)
    try:
        _drive_agent(run) if run.side() == Side.AGENT else _drive_client(run)
    except AcpError as e:
        return run.name(), str(e)
    return run.name(), None


def vector_files(dirs: Sequence[Path]) -> List[Path]:
    """Every ``*.json`` below ``dirs``, sorted."""
    files: List[Path] = []
    for d in dirs:
        files += [d] if d.is_file() else sorted(d.rglob("*.json"))
    return sorted(files)


def main(argv: Sequence[str]) -> int:
    dirs = [Path(a) for a in argv] or [Path(p) for p in os.environ.get("ACP_INJECT_VECTORS", "").split(os.pathsep) if p]
    if not dirs:
        print("usage: python -m tests.conformance DIR… (or set ACP_INJECT_VECTORS)", file=sys.stderr)
        return 2
    failed = 0
    files = vector_files(dirs)
    for f in files:
        name, mismatch = run_text(f.read_text())
        if mismatch is not None:
            failed += 1
            print(f"FAILED {name} ({f})\n  {mismatch}")
    print(f"{len(files) - failed} passed, {failed} failed")
    return 1 if failed or not files else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
