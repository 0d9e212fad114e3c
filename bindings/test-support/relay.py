"""A TCP relay the binding tests put between a client and an agent, to drop the network
mid-turn as a phone does.

    python3 relay.py HOST:PORT

Listens on a free loopback port and prints it (``127.0.0.1:PORT``) on stdout; relays every
connection to ``HOST:PORT``. Reads commands on stdin, one per line:

- ``cut`` drops every connection open now, both ways at once (new ones are still relayed),
  and answers ``cut`` when done;
- ``drop-stream SESSION`` drops the one connection carrying that session's Streamable HTTP
  stream (the ``GET`` with its ``Acp-Session-Id``) the way a relay that gives up without
  telling the agent does: the client's side is reset, the agent's stays open and what it
  writes is read and dropped. Answers ``dropped``, or ``none`` when no such stream is open;
- ``cut-answer METHOD`` arms a cut: the connection that carries the next request of
  ``METHOD`` (``"method":"METHOD"`` in what the client sends) reaches the agent whole, and is
  reset both ways as soon as the agent starts answering it, so the client never reads the
  answer to that POST. On a WebSocket (its frames read here) the socket is reset when the
  agent's answer to that request comes, before a byte of it reaches the client. Answers
  ``armed``;
- ``answers-cut`` answers ``cut N``: how many answers were cut off so far, once a cut armed
  and matched is carried out (over Streamable HTTP the answer itself travels on the session's
  stream and may reach the client before the POST's connection is cut; up to 5 s).

Exits when stdin ends. Standard library only (the Swift tests run it in their chroot).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import json
from typing import Iterator, List, Optional, Set, Tuple


class Link:
    """One relayed connection: its two writers, the session whose stream it carries (once
    its GET is seen), and whether the agent's output is being dropped."""

    def __init__(self, inbound: asyncio.StreamWriter, outbound: asyncio.StreamWriter) -> None:
        self.inbound, self.outbound = inbound, outbound
        self.session: Optional[str] = None
        self.silenced = False
        self.cut_answer = False
        # A WebSocket: the frames read so far each way (the agent's after its 101's head),
        # and the id of the request whose answer is cut off.
        self.websocket = False
        self.up_frames = bytearray()
        self.down_frames: Optional[bytearray] = None
        self.doomed: Tuple[bool, object] = (False, None)


def frames(buffer: bytearray) -> Iterator[Tuple[int, bytes]]:
    """Takes the whole WebSocket frames off the front of ``buffer``: (opcode, payload),
    unmasked."""
    while len(buffer) >= 2:
        masked, size, at = buffer[1] & 0x80, buffer[1] & 0x7F, 2
        if size >= 126:
            width = 2 if size == 126 else 8
            if len(buffer) < at + width:
                return
            size, at = int.from_bytes(buffer[at : at + width], "big"), at + width
        key = b""
        if masked:
            key, at = bytes(buffer[at : at + 4]), at + 4
        if len(buffer) < at + size:
            return
        payload = bytes(buffer[at : at + size])
        if masked:
            payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
        opcode = buffer[0] & 0x0F
        del buffer[: at + size]
        yield opcode, payload


def message(payload: bytes) -> dict:
    try:
        value = json.loads(payload)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


async def main(target: str) -> None:
    host, port = target.rsplit(":", 1)
    links: Set[Link] = set()
    armed: List[Optional[str]] = [None]
    answers_cut = [0]
    # Cuts matched to a request and not carried out yet.
    cuts_due = [0]

    async def up(reader: asyncio.StreamReader, link: Link) -> None:
        try:
            while data := await reader.read(65536):
                text = data.decode("latin-1").lower()
                if link.websocket:
                    link.up_frames += data
                    for opcode, payload in frames(link.up_frames):
                        if opcode == 1 and armed[0] is not None and armed[0] in payload.decode("utf-8", "replace").lower():
                            armed[0] = None
                            cuts_due[0] += 1
                            link.doomed = (True, message(payload).get("id"))
                elif text.startswith("get ") and "upgrade: websocket" in text:
                    link.websocket = True
                    link.down_frames = bytearray()
                    link.up_frames += data[data.find(b"\r\n\r\n") + 4 :]
                else:
                    if text.startswith("get ") and "acp-session-id: " in text:
                        link.session = text.split("acp-session-id: ", 1)[1].split("\r\n", 1)[0].strip()
                    if armed[0] is not None and armed[0] in text:
                        armed[0] = None
                        cuts_due[0] += 1
                        link.cut_answer = True
                if link.silenced:
                    continue
                link.outbound.write(data)
                await link.outbound.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            if not link.silenced:
                link.outbound.close()

    async def down(reader: asyncio.StreamReader, link: Link) -> None:
        try:
            head: Optional[bytearray] = bytearray()
            while data := await reader.read(65536):
                if link.down_frames is not None:
                    # A WebSocket: past the 101's head, look for the doomed request's answer.
                    if head is not None:
                        head += data
                        if b"\r\n\r\n" in head:
                            link.down_frames += head[head.find(b"\r\n\r\n") + 4 :]
                            head = None
                    else:
                        link.down_frames += data
                    doomed, id_ = link.doomed
                    for opcode, payload in frames(link.down_frames):
                        answer = message(payload) if doomed and opcode == 1 else {}
                        if "id" in answer and "method" not in answer and answer["id"] == id_:
                            answers_cut[0] += 1
                            cuts_due[0] -= 1
                            link.inbound.transport.abort()
                            link.outbound.transport.abort()
                            return
                elif link.cut_answer:
                    # The answer to the armed request: the connection breaks before a byte of
                    # it reaches the client.
                    answers_cut[0] += 1
                    cuts_due[0] -= 1
                    link.inbound.transport.abort()
                    link.outbound.transport.abort()
                    return
                if link.silenced:
                    continue  # read and dropped: the agent is not told
                link.inbound.write(data)
                await link.inbound.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            if not link.silenced:
                link.inbound.close()

    async def relay(inbound_r: asyncio.StreamReader, inbound_w: asyncio.StreamWriter) -> None:
        try:
            outbound_r, outbound_w = await asyncio.open_connection(host, int(port))
        except OSError:
            inbound_w.close()
            return
        link = Link(inbound_w, outbound_w)
        links.add(link)
        await asyncio.gather(up(inbound_r, link), down(outbound_r, link))
        links.discard(link)

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    print(f"127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    loop = asyncio.get_running_loop()
    commands = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(commands), sys.stdin)
    while line := await commands.readline():
        command = line.decode().split()
        if command == ["cut"]:
            for link in list(links):
                # An abortive close (RST), as a vanished network looks to both ends.
                link.inbound.transport.abort()
                link.outbound.transport.abort()
            links.clear()
            print("cut", flush=True)
        elif len(command) == 2 and command[0] == "drop-stream":
            found = [link for link in links if link.session == command[1].lower() and not link.silenced]
            for link in found:
                link.silenced = True
                link.inbound.transport.abort()
            print("dropped" if found else "none", flush=True)
        elif len(command) == 2 and command[0] == "cut-answer":
            armed[0] = f'"method":"{command[1]}"'.lower()
            print("armed", flush=True)
        elif command == ["answers-cut"]:
            for _ in range(500):
                if cuts_due[0] <= 0:
                    break
                await asyncio.sleep(0.01)
            print(f"cut {answers_cut[0]}", flush=True)
    server.close()


if __name__ == "__main__":
    # A parent may start this with SIGTERM blocked (a spawned process inherits the mask:
    # Foundation's `Process` on Linux does this); the tests stop it with SIGTERM.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    asyncio.run(main(sys.argv[1]))
