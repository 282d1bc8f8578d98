"""`install_codegen_cache`: kafka-python's generated request decoders and response encoders, compiled once per machine.

kafka-python (3.x) writes the Python source of a flat encoder or decoder for each message struct and version the
first time one is used, and compiles it with `compile()`: some 3-6 ms per message version, so a new broker's first
ApiVersions, Metadata and Produce answers cost it ~20 ms of CPU before the first record is acknowledged
(bench/startup.py, the `python -c` line). That source is the same in every process, so the code object it compiles
to is kept as Python keeps a module's bytecode: marshalled, in a file named by a hash of the source, under the
interpreter's cache tag (the bytecode format) in `sys.pycache_prefix`/minikafka-codegen when one is set (MiniKafka
sets it), else `$XDG_CACHE_HOME` (or ~/.cache)/minikafka/codegen. Only the `compile()` step is replaced: the source
is still generated, and a cached code object is used only for exactly that source, so a kafka-python upgrade
changes the keys. Like `.pyc` files it is not written when `sys.dont_write_bytecode` is set, and a cache that cannot
be read or written (read-only home, full disk) just compiles as before.

Any thread: the files are written under a unique name and renamed into place.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import marshal
import os
import sys
from pathlib import Path
from types import CodeType


def codegen_cache_dir() -> Path:
    tag = sys.implementation.cache_tag or "python"
    if sys.pycache_prefix:
        return Path(sys.pycache_prefix) / "minikafka-codegen" / tag
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home) / "minikafka" / "codegen" / tag


def _cache_path(directory: Path, source: str, filename: str, mode: str) -> Path:
    digest = hashlib.sha256(f"{filename}\0{mode}\0{source}".encode()).hexdigest()
    return directory / f"{digest}.marshal"


def cached_compile(directory: Path, source: str, filename: str, mode: str) -> CodeType:
    """`compile(source, filename, mode)`, read from `directory` when compiled before."""
    path = _cache_path(directory, source, filename, mode)
    try:
        code = marshal.loads(path.read_bytes())
        if isinstance(code, CodeType):
            return code
    except (OSError, EOFError, ValueError, TypeError):
        pass
    code = builtins.compile(source, filename, mode)
    if not sys.dont_write_bytecode:
        temporary = path.with_name(f"{path.name}.{os.getpid()}.{id(code)}.tmp")
        try:
            directory.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(marshal.dumps(code))
            os.replace(temporary, path)
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink()
    return code


def install_codegen_cache(directory: Path | None = None) -> Path:
    """Make kafka-python's code generator compile through `cached_compile` (idempotent); returns the directory."""
    from kafka.protocol.schemas.fields import struct as generated_structs

    target = directory or codegen_cache_dir()

    def compile_cached(source: str, filename: str, mode: str) -> CodeType:
        return cached_compile(target, source, filename, mode)

    generated_structs.compile = compile_cached  # shadows the builtin in that module
    return target
