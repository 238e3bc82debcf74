"""Index directories on disk: Arrow IPC files plus a JSON manifest with checksums.

Layout of an index directory::

    manifest.json            format version, config, learned params, file sizes + SHA-256
    tools.arrow              id, payload (the tool as JSON)
    vocab.arrow              term (id = row number)
    field.<name>.arrow       one row of list columns: indptr, doc_ids, tfs, doc_len[, doc_group]

Writes are atomic at the directory level: everything goes to a temporary sibling that
replaces the target only when complete, so a crash never leaves a half-written index.
Reads check sizes and checksums before a byte is trusted, and memory-map the Arrow files
so the C++ core serves straight from the page cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

from ..errors import IndexCorruptError, IndexFormatError

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "write_index_dir", "read_manifest", "open_table"]

FORMAT_NAME = "toolsift-index"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _write_table(path: Path, table: pa.Table) -> None:
    with pa.OSFile(str(path), "wb") as sink:
        with ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    _fsync(path)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_index_dir(target: str | os.PathLike, tables: Mapping[str, pa.Table],
                    manifest: dict[str, Any]) -> Path:
    """Write ``tables`` (file name -> table) and ``manifest`` atomically to ``target``.

    The manifest gains ``files`` (size and SHA-256 per file) and a ``manifest_sha256``
    over its own canonical JSON, so a damaged manifest is detected too.
    """
    target = Path(target).absolute()
    if target.exists() and not target.is_dir():
        raise IndexFormatError(f"{target} exists and is not a directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        files: dict[str, Any] = {}
        for name, table in tables.items():
            path = tmp / name
            _write_table(path, table)
            files[name] = {"bytes": path.stat().st_size, "sha256": _sha256(path)}
        body = dict(manifest, format=FORMAT_NAME, format_version=FORMAT_VERSION, files=files)
        body["manifest_sha256"] = hashlib.sha256(_canonical(body)).hexdigest()
        mpath = tmp / MANIFEST
        mpath.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        _fsync(mpath)
        old = None
        if target.exists():
            old = target.parent / f".{target.name}.old-{os.getpid()}-{tmp.name[-8:]}"
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def read_manifest(directory: str | os.PathLike, *, verify: bool = True) -> dict[str, Any]:
    """Read and check the manifest of an index directory.

    Args:
        directory: The index directory.
        verify: Also check every file's SHA-256 (sizes are always checked).

    Raises:
        IndexFormatError: Missing directory/manifest, another format, a newer version.
        IndexCorruptError: A size, checksum or the manifest's own checksum differs.
    """
    directory = Path(directory)
    mpath = directory / MANIFEST
    if not directory.is_dir():
        raise IndexFormatError(f"{directory} is not an index directory (it does not exist)")
    if not mpath.is_file():
        raise IndexFormatError(f"{directory} is not an index directory: {MANIFEST} is missing")
    try:
        body = json.loads(mpath.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IndexCorruptError(f"{mpath}: not valid JSON ({exc})") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT_NAME:
        raise IndexFormatError(f"{mpath}: not a {FORMAT_NAME} manifest")
    claimed = body.pop("manifest_sha256", None)
    if claimed != hashlib.sha256(_canonical(body)).hexdigest():
        raise IndexCorruptError(f"{mpath}: manifest checksum mismatch (the file was modified or damaged)")
    version = body.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise IndexFormatError(
            f"{mpath}: format version {version!r} is newer than this toolsift reads ({FORMAT_VERSION})"
        )
    for name, meta in body.get("files", {}).items():
        path = directory / name
        if not path.is_file():
            raise IndexCorruptError(f"{path}: file listed in the manifest is missing")
        size = path.stat().st_size
        if size != meta["bytes"]:
            raise IndexCorruptError(f"{path}: {size} bytes on disk, manifest says {meta['bytes']} (truncated?)")
        if verify and _sha256(path) != meta["sha256"]:
            raise IndexCorruptError(f"{path}: SHA-256 mismatch (the file is damaged)")
    return body


def open_table(directory: str | os.PathLike, name: str, *, mmap: bool) -> pa.Table:
    """Open one Arrow IPC file of an index; memory-mapped (zero-copy) when ``mmap``."""
    path = Path(directory) / name
    try:
        source = pa.memory_map(str(path), "r") if mmap else pa.OSFile(str(path), "rb")
        with source:
            reader = ipc.open_file(source)
            # Buffers of a memory map share its mapped region, which outlives close().
            return reader.read_all()
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError) as exc:
        raise IndexCorruptError(f"{path}: cannot read Arrow IPC file ({exc})") from None
