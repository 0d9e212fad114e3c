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
  answer to that POST. Answers ``armed``;
- ``answers-cut`` answers ``cut N``: how many answers were cut off so far.

Exits when stdin ends. Standard library only (the Swift tests run it in their chroot).
"""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import List, Optional, Set


class Link:
    """One relayed connection: its two writers, the session whose stream it carries (once
    its GET is seen), and whether the agent's output is being dropped."""

    def __init__(self, inbound: asyncio.StreamWriter, outbound: asyncio.StreamWriter) -> None:
        self.inbound, self.outbound = inbound, outbound
        self.session: Optional[str] = None
        self.silenced = False
        self.cut_answer = False


async def main(target: str) -> None:
    host, port = target.rsplit(":", 1)
    links: Set[Link] = set()
    armed: List[Optional[str]] = [None]
    answers_cut = [0]

    async def up(reader: asyncio.StreamReader, link: Link) -> None:
        try:
            while data := await reader.read(65536):
                text = data.decode("latin-1").lower()
                if text.startswith("get ") and "acp-session-id: " in text:
                    link.session = text.split("acp-session-id: ", 1)[1].split("\r\n", 1)[0].strip()
                if armed[0] is not None and armed[0] in text:
                    armed[0] = None
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
            while data := await reader.read(65536):
                if link.cut_answer:
                    # The answer to the armed request: the connection breaks before a byte of
                    # it reaches the client.
                    answers_cut[0] += 1
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
            print(f"cut {answers_cut[0]}", flush=True)
    server.close()


if __name__ == "__main__":
    # A parent may start this with SIGTERM blocked (a spawned process inherits the mask:
    # Foundation's `Process` on Linux does this); the tests stop it with SIGTERM.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    asyncio.run(main(sys.argv[1]))
