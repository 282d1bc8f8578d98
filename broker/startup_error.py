"""`StartupError`: a start-up failure the user caused and can fix (a port in use, a log dir that cannot be created
or is locked by another broker, a malformed config file). `minikafka serve` prints its message as one line and
exits non-zero, without a traceback; every other exception is a bug and keeps its traceback."""

from __future__ import annotations

import errno
import socket


class StartupError(Exception):
    """One line naming the key, the value and the fix."""

    def __init__(self, key: str, value: object, problem: str, fix: str) -> None:
        self.key = key
        self.value = value
        super().__init__(f"{key}={value}: {problem}; {fix}")


_FIXABLE_BIND_ERRNOS = frozenset({errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES})


def bind_error(key: str, value: str, error: OSError, fix: str) -> Exception:
    """What a failed bind of `key`'s address raises: a StartupError when the user can fix it (the port is in use,
    the address is not this host's, a privileged port, a host name that does not resolve), else `error` itself."""
    if isinstance(error, socket.gaierror):
        return StartupError(key, value, f"cannot resolve the host ({error.strerror})", fix)
    if error.errno in _FIXABLE_BIND_ERRNOS:
        return StartupError(key, value, f"cannot listen there ({error.strerror or error})", fix)
    return error
