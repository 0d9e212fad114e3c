"""A TCP relay the binding tests put between a client and an agent, to drop the network
mid-turn as a phone does.

    python3 relay.py HOST:PORT

Listens on a free loopback port and prints it (``127.0.0.1:PORT``) on stdout; relays every
connection to ``HOST:PORT``. Reads commands on stdin, one per line: ``cut`` drops every
connection open now, both ways at once (new ones are still relayed), and answers ``cut`` when
done. Exits when stdin ends. Standard library only (the Swift tests run it in their chroot).
"""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Set


async def main(target: str) -> None:
    host, port = target.rsplit(":", 1)
    links: Set[asyncio.StreamWriter] = set()

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def relay(inbound_r: asyncio.StreamReader, inbound_w: asyncio.StreamWriter) -> None:
        try:
            outbound_r, outbound_w = await asyncio.open_connection(host, int(port))
        except OSError:
            inbound_w.close()
            return
        links.update((inbound_w, outbound_w))
        await asyncio.gather(pipe(inbound_r, outbound_w), pipe(outbound_r, inbound_w))
        links.difference_update((inbound_w, outbound_w))

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    print(f"127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    loop = asyncio.get_running_loop()
    commands = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(commands), sys.stdin)
    while line := await commands.readline():
        if line.strip() == b"cut":
            for writer in list(links):
                # An abortive close (RST), as a vanished network looks to both ends.
                transport = writer.transport
                transport.abort()
            links.clear()
            print("cut", flush=True)
    server.close()


if __name__ == "__main__":
    # A parent may start this with SIGTERM blocked (a spawned process inherits the mask:
    # Foundation's `Process` on Linux does this); the tests stop it with SIGTERM.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    asyncio.run(main(sys.argv[1]))
