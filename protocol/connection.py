"""`ServerConnection`: the broker side of one Kafka connection, sans-IO (in the style of h11).

Bytes go in through `receive_data()`; `next_event()` returns a `RequestReceived`, `NEED_DATA`, or
`CONNECTION_CLOSED` (after EOF), and raises `ProtocolError` for anything the peer must not send: a frame
larger than `socket.request.max.bytes`, a negative or truncated-header frame, an unknown API key, an
unsupported version of any API but ApiVersions, Produce v0-2, or a body that does not decode. The only
answer to a ProtocolError is closing this one connection, as Kafka does.

`encode_response()` turns a response object into the frame to write (`encode_response_frame()`: a Fetch response
as a `BufferedFrame` that shares its record data). Ordering is the caller's job: Kafka
answers one request at a time per connection, and so does the broker's network layer.

Not thread-safe; one instance per connection, used from one task.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import Enum
from typing import Any

from minikafka.protocol.api_keys import ApiKey, is_accepted
from minikafka.protocol.errors import CorruptMessageError, ProtocolError
from minikafka.protocol.fetch_response import FetchResponse
from minikafka.protocol.messages import decode_request, encode_response, is_flexible
from minikafka.protocol.records.varint import decode_unsigned_varint
from minikafka.protocol.response_frame import ResponseFrame

#: Kafka's socket.request.max.bytes default (100 MiB).
DEFAULT_MAX_REQUEST_BYTES = 104_857_600

_INT32 = struct.Struct(">i")
_HEADER_PREFIX = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_INT16 = struct.Struct(">h")
#: ApiKey by wire value: a dict lookup instead of the enum's call, which costs a microsecond per request
_API_KEYS: dict[int, ApiKey] = {int(key): key for key in ApiKey}


class Sentinel(Enum):
    """Non-request results of `next_event()`."""

    NEED_DATA = "NEED_DATA"
    CONNECTION_CLOSED = "CONNECTION_CLOSED"


NEED_DATA = Sentinel.NEED_DATA
CONNECTION_CLOSED = Sentinel.CONNECTION_CLOSED


@dataclass(frozen=True, slots=True)
class RequestReceived:
    """One decoded request. `request` is None only for an ApiVersions request of a too-new version,
    which must be answered with UNSUPPORTED_VERSION in the v0 layout."""

    api_key: ApiKey
    api_version: int
    correlation_id: int
    client_id: str | None
    request: Any
    size_bytes: int

    @property
    def unsupported_version(self) -> bool:
        return self.request is None


class ServerConnection:
    """Frames and decodes requests from one client connection; encodes its responses."""

    def __init__(self, max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> None:
        self.max_request_bytes = max_request_bytes
        # The bytes received are kept as the socket reads delivered them: frames inside one read are handed out
        # as memoryviews of it (no copy), and a frame spread over several reads is joined once, when complete.
        self._head = b""  # the first unparsed read (or reads joined), parsed from _start
        self._start = 0
        self._tail: list[bytes] = []  # later reads, not joined yet
        self._tail_bytes = 0
        self._eof = False

    def receive_data(self, data: bytes) -> None:
        """Buffer bytes from the peer; `b""` means the peer closed its side."""
        if not data:
            self._eof = True
        elif self._start >= len(self._head) and not self._tail:
            self._head, self._start = bytes(data), 0
        else:
            self._tail.append(bytes(data))
            self._tail_bytes += len(data)

    @property
    def buffered_bytes(self) -> int:
        return len(self._head) - self._start + self._tail_bytes

    def pending_frame_bytes(self) -> int | None:
        """The declared size of the next frame once its 4-byte size prefix has arrived, else None."""
        if self.buffered_bytes < 4:
            return None
        if len(self._head) - self._start < 4:
            self._join(4)
        size: int = _INT32.unpack_from(self._head, self._start)[0]
        return size

    def next_event(self) -> RequestReceived | Sentinel:
        """The next complete request, NEED_DATA, or CONNECTION_CLOSED; raises ProtocolError on bad bytes."""
        size = self.pending_frame_bytes()
        available = self.buffered_bytes
        if size is None:
            return self._incomplete(available)
        if size < 0 or size > self.max_request_bytes:
            raise ProtocolError(
                f"frame size {size} outside [0, socket.request.max.bytes={self.max_request_bytes}]"
            )
        if available < 4 + size:
            return self._incomplete(available)
        if len(self._head) - self._start < 4 + size:
            self._join(4 + size)
        begin = self._start + 4
        frame = memoryview(self._head)[begin : begin + size]
        self._start = begin + size
        return self._parse_frame(frame)

    def _join(self, needed_bytes: int) -> None:
        """Make the head hold at least `needed_bytes` unparsed bytes, joining only the later reads that takes (so a
        size prefix split over reads does not copy the rest of its frame twice)."""
        parts: list[bytes | memoryview] = [memoryview(self._head)[self._start :]]
        joined_bytes = len(parts[0])
        taken = 0
        while joined_bytes < needed_bytes:
            parts.append(self._tail[taken])
            joined_bytes += len(self._tail[taken])
            taken += 1
        self._tail_bytes -= joined_bytes - len(parts[0])
        del self._tail[:taken]
        self._head = b"".join(parts)
        self._start = 0

    def _incomplete(self, available: int) -> Sentinel:
        if self._eof:
            if available:
                raise ProtocolError(f"connection closed with {available} bytes of an incomplete frame")
            return CONNECTION_CLOSED
        return NEED_DATA

    def _parse_frame(self, frame: memoryview) -> RequestReceived:
        if len(frame) < 10:
            raise ProtocolError(f"request header truncated ({len(frame)} bytes)")
        api_key_value, api_version, correlation_id = _HEADER_PREFIX.unpack_from(frame, 0)
        (client_id_length,) = _INT16.unpack_from(frame, 8)
        position = 10
        client_id: str | None = None
        if client_id_length >= 0:
            if position + client_id_length > len(frame):
                raise ProtocolError("client_id runs past the end of the frame")
            try:
                client_id = bytes(frame[position : position + client_id_length]).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ProtocolError("client_id is not UTF-8") from exc
            position += client_id_length
        elif client_id_length != -1:
            raise ProtocolError(f"invalid client_id length {client_id_length}")
        api_key = _API_KEYS.get(api_key_value)
        if api_key is None:
            raise ProtocolError(f"unknown API key {api_key_value}")
        if not is_accepted(api_key, api_version):
            if api_key is ApiKey.API_VERSIONS and api_version >= 0:
                return RequestReceived(api_key, api_version, correlation_id, client_id, None, len(frame))
            raise ProtocolError(f"unsupported version {api_version} of {api_key.name}")
        if is_flexible(api_key, api_version):
            position = _skip_tagged_fields(frame, position)
        request = decode_request(api_key, api_version, frame[position:])
        return RequestReceived(api_key, api_version, correlation_id, client_id, request, len(frame))

    @staticmethod
    def encode_response(event: RequestReceived, response: Any) -> bytes:
        """The size-prefixed frame answering `event` (header v0 or v1 as the API version requires)."""
        return encode_response(response, event.correlation_id)

    @staticmethod
    def encode_response_frame(event: RequestReceived, response: Any) -> ResponseFrame:
        """As `encode_response`, but a Fetch response comes back as buffers that share its record data."""
        if isinstance(response, FetchResponse):
            return response.encode_frame(event.correlation_id)
        return encode_response(response, event.correlation_id)


def _skip_tagged_fields(frame: memoryview, position: int) -> int:
    try:
        count, position = decode_unsigned_varint(frame, position)
        for _ in range(count):
            _tag, position = decode_unsigned_varint(frame, position)
            size, position = decode_unsigned_varint(frame, position)
            position += size
            if position > len(frame):
                raise ProtocolError("tagged field runs past the end of the frame")
    except CorruptMessageError as error:
        raise ProtocolError(f"request header: {error.message}") from None
    return position
