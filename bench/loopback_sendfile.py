"""sendfile(2) vs. pread + send over loopback TCP: the sender's CPU per GiB (issue 14, why Fetch copies).

    .venv/bin/python -m bench.loopback_sendfile [--gib 1] [--rounds 6] [--chunk-kib 1024]

Writes a file of `--gib` GiB (random bytes, then read once so it is in the page cache), then per round sends it
over a loopback TCP connection to a reader thread in 1 MiB pieces (a Fetch response's partition data) both ways,
alternating: `os.sendfile` from the file, and `os.pread` into memory then `socket.sendall` (what minikafka's Fetch
path does, with uvloop's writev). CPU = the sending thread's CPU time (`time.thread_time`), which on loopback also
holds the kernel's delivery of the segments to the receiving socket. Prints each round and the medians.

Kafka serves plaintext fetches with sendfile; on this project's machine that costs the sender more CPU than the
copy (bench/results/HISTORY.md, 2026-11-24), which is why minikafka's Fetch path reads the segment bytes instead.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path


def _drain(sock: socket.socket) -> None:
    buffer = bytearray(1 << 20)
    while sock.recv_into(buffer):
        pass


def send_once(fd: int, size: int, chunk: int, use_sendfile: bool) -> float:
    """Send the file's first `size` bytes over a fresh loopback connection; the sending thread's CPU seconds."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        sender, _ = server.accept()
    reader = threading.Thread(target=_drain, args=(client,))
    reader.start()
    with sender:
        sender.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        started = time.thread_time()
        for position in range(0, size, chunk):
            count = min(chunk, size - position)
            if use_sendfile:
                end = position + count
                while position < end:
                    position += os.sendfile(sender.fileno(), fd, position, end - position)
            else:
                sender.sendall(os.pread(fd, count, position))
        used = time.thread_time() - started
    reader.join()
    client.close()
    return used


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--chunk-kib", type=int, default=1024)
    args = parser.parse_args(argv)
    size = int(args.gib * 2**30)
    chunk = args.chunk_kib * 1024
    with tempfile.TemporaryDirectory(prefix="loopback-sendfile-") as work:
        path = Path(work) / "segment.log"
        with path.open("wb") as file:
            for _ in range(0, size, 1 << 24):
                file.write(os.urandom(1 << 24))
        fd = os.open(path, os.O_RDONLY)
        try:
            while os.read(fd, 1 << 24):  # into the page cache
                pass
            results: dict[str, list[float]] = {"sendfile": [], "pread+send": []}
            for round_number in range(args.rounds):
                for name in results:
                    used = send_once(fd, size, chunk, name == "sendfile")
                    results[name].append(used / args.gib)
                    print(f"round {round_number + 1}: {name:10} {used / args.gib:.3f} CPU-s/GiB", flush=True)
        finally:
            os.close(fd)
    medians = {name: statistics.median(values) for name, values in results.items()}
    print(f"median sender CPU-s/GiB: sendfile {medians['sendfile']:.3f}, pread+send {medians['pread+send']:.3f} "
          f"(sendfile / copy = {medians['sendfile'] / medians['pread+send']:.2f}); {os.cpu_count()} CPUs, "
          f"{os.uname().release}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
