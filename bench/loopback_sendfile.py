"""How a Fetch response's record bytes reach a loopback socket: the sender's CPU per GiB (issues 14 and 36).

    .venv/bin/python -m bench.loopback_sendfile [--gib 1] [--rounds 6] [--pieces 8] [--chunk-kib 1024] [--no-pin]

Writes a file of `--gib` GiB (random bytes in 256 KiB writes, then read once so it is in the page cache), then per
round sends all of it over a fresh loopback TCP connection to a reader in another process, in responses of
`--pieces` pieces of `--chunk-kib` KiB (an eight-partition Fetch of 1 MiB per partition by default), three ways,
in turn:

- `read all, then send`: `os.pread` every piece of a response, then send them (what minikafka's Fetch does: the
  handler reads every partition, the connection writes the frame);
- `read, send each`: `os.pread` one piece and send it before reading the next (the copy into the socket reads
  bytes the `pread` has just left in the CPU's caches);
- `sendfile`: `os.sendfile` of each piece from the file (what Kafka does for plaintext fetches);
- `mmap, send`: map each piece of the file (read-only, shared) and send from the mapping: no copy into a buffer of
  ours, but the send's copy faults the page-cache pages into the mapping.

CPU = the sending process's user + system time (`getrusage`), which on loopback also holds the kernel's delivery of
the segments to the receiving socket. The sender runs on CPU 0 and the reader on CPU 1 (a broker and its consumer
on a two-core machine) unless `--no-pin`. Prints each round, then the medians and each way's median ratio to
`read all, then send`. Results so far: DESIGN.md, "Socket buffers" (on this project's machine neither sendfile nor
reading and sending each piece nor sending from a mapping was cheaper by more than the noise).
"""

from __future__ import annotations

import argparse
import mmap
import os
import resource
import socket
import statistics
import tempfile
from pathlib import Path

READ_ALL = "read all, then send"
READ_EACH = "read, send each"
SENDFILE = "sendfile"
MMAP = "mmap, send"
WAYS = (READ_ALL, READ_EACH, SENDFILE, MMAP)


def _read_until_closed(port: int, cpu: int | None) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    with socket.create_connection(("127.0.0.1", port)) as receiver:
        buffer = bytearray(1 << 20)
        while receiver.recv_into(buffer):
            pass


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def send_once(fd: int, size: int, piece_bytes: int, pieces: int, way: str, pin: bool) -> float:
    """Send the file's first `size` bytes to a reader process; the sender's CPU seconds."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        reader = os.fork()
        if reader == 0:  # the reader: nothing of the parent's state is used
            try:
                _read_until_closed(server.getsockname()[1], 1 if pin else None)
            finally:
                os._exit(0)
        sender, _ = server.accept()
    response_bytes = piece_bytes * pieces
    with sender:
        sender.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        started = _cpu_s()
        for response in range(0, size, response_bytes):
            positions = range(response, min(size, response + response_bytes), piece_bytes)
            if way == READ_ALL:
                for data in [os.pread(fd, piece_bytes, position) for position in positions]:
                    sender.sendall(data)
            elif way == READ_EACH:
                for position in positions:
                    sender.sendall(os.pread(fd, piece_bytes, position))
            elif way == SENDFILE:
                for position in positions:
                    end = min(size, position + piece_bytes)
                    while position < end:
                        position += os.sendfile(sender.fileno(), fd, position, end - position)
            else:
                for position in positions:  # pieces start at multiples of the chunk size: page-aligned
                    with mmap.mmap(fd, min(piece_bytes, size - position), prot=mmap.PROT_READ,
                                   offset=position) as mapped:
                        sender.sendall(mapped)
        used = _cpu_s() - started
    os.waitpid(reader, 0)
    return used


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--pieces", type=int, default=8, help="pieces per response (partitions per Fetch)")
    parser.add_argument("--chunk-kib", type=int, default=1024, help="bytes per piece (max.partition.fetch.bytes)")
    parser.add_argument("--no-pin", action="store_true", help="let the scheduler place the sender and reader")
    args = parser.parse_args(argv)
    size = int(args.gib * 2**30)
    pin = not args.no_pin and len(os.sched_getaffinity(0)) >= 2 and {0, 1} <= os.sched_getaffinity(0)
    if pin:
        os.sched_setaffinity(0, {0})
    with tempfile.TemporaryDirectory(prefix="loopback-sendfile-", dir=Path.cwd()) as work:
        path = Path(work) / "segment.log"
        with path.open("wb") as file:
            for _ in range(0, size, 1 << 18):  # 256 KiB writes, as the broker's filled-ahead segments are written
                file.write(os.urandom(1 << 18))
        fd = os.open(path, os.O_RDONLY)
        try:
            while os.read(fd, 1 << 24):  # into the page cache
                pass
            results: dict[str, list[float]] = {way: [] for way in WAYS}
            for round_number in range(args.rounds):
                for way in WAYS:
                    used = send_once(fd, size, args.chunk_kib * 1024, args.pieces, way, pin)
                    results[way].append(used / args.gib)
                    print(f"round {round_number + 1}: {way:20} {used / args.gib:.3f} CPU-s/GiB", flush=True)
        finally:
            os.close(fd)
    print(f"sender CPU-s/GiB, medians of {args.rounds} rounds ({args.pieces} x {args.chunk_kib} KiB a response; "
          f"{os.cpu_count()} CPUs, {'pinned' if pin else 'not pinned'}, {os.uname().release}):")
    for way in WAYS:
        ratio = statistics.median(mine / base for mine, base in zip(results[way], results[READ_ALL], strict=True))
        print(f"  {way:20} {statistics.median(results[way]):.3f}  ({ratio:.2f}x {READ_ALL})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
