"""Index directories on disk: Arrow IPC files plus a JSON manifest with checksums.

Layout of an index directory::

    manifest.json            the commit point: format version, config, learned params,
                             ``generation``, ``save_id``, ``data`` (the subfolder below),
                             file sizes + SHA-256
    v000007-<save_id>/       the files of generation 7:
        manifest.json        a copy of the manifest that committed it (what a leased
                             reader checks, so a later commit cannot change it underfoot)
        .lease               readers hold a shared flock on it while opening the files
        tools.arrow          id, name, payload (the tool as JSON), params (required
                             flag per parameter), fields (presence bits): see
                             toolsift.index.tooltable (format 1: id, payload only)
        vocab.arrow          term (id = row number)
        field.<name>.arrow   one row of list columns: indptr, doc_ids, tfs, doc_len[, doc_group]
        dense.<name>.arrow   int8 codes + float32 scale per row
        ivf.<name>.arrow     IVF of a large dense field: centroids, list_ptr, list_ids, info
    .lock                    held (``flock``) by the process saving

A save writes a new versioned subfolder next to the current one, then atomically
replaces ``manifest.json`` (``os.replace`` of one file) to point at it, the way Lucene
commits with ``segments_N``: a reader sees the old index or the new one, never a mix or
nothing, and a save killed at any moment leaves the old index in place. Leftovers (older
generations, folders of killed saves, temporary manifests) are removed by the next save,
under the lock, so two processes saving at once cannot delete each other's work; a
generation is removed only when no reader holds its lease (a non-blocking exclusive
``flock`` on its ``.lease`` succeeds), else it is left for a later save. A reader
(:func:`leased_manifest`) takes the lease of the generation the manifest names, checks
it was not deleted meanwhile, and reads that generation's own manifest copy: however
fast saves follow each other, a slow reader never loses its files, and the kernel drops
the lease of a reader that dies. Every Arrow file carries the save's random ``save_id``
in its schema metadata, so a file copied in from another index (even one of the same
size) is detected without checksums. Directories written before versioned subfolders (``manifest.json`` beside
the Arrow files, no ``data`` key) are still read, and are converted by the next save.

Reads check sizes (always) and checksums (``verify=True``) before a byte is trusted,
and memory-map the Arrow files so the C++ core serves straight from the page cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from ..errors import IndexCorruptError, IndexFormatError, IndexNotFoundError

try:  # POSIX; elsewhere concurrent saves to one directory are not serialised
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["BatchStream", "FORMAT_NAME", "FORMAT_VERSION", "SAVE_ID_KEY", "write_index_dir", "read_manifest", "open_table",
           "manifest_token", "leased_manifest"]

FORMAT_NAME = "toolsift-index"
#: 2: tools.arrow is the columnar tool table (tools decoded lazily). 3: an IVF file holds
#: row ids only, no list-order copy of the rows (``ivf.<field>.arrow``). 1 and 2 are still read.
FORMAT_VERSION = 3
MANIFEST = "manifest.json"
LOCK = ".lock"
LEASE = ".lease"
#: How often a reader re-reads the manifest when the generation it named vanished before
#: its lease was taken (each time a save committed in between; generous on purpose).
_LEASE_ATTEMPTS = 1000
#: Arrow schema metadata key holding the id of the save that wrote a file.
SAVE_ID_KEY = b"toolsift.save_id"
_DATA_DIR = re.compile(r"v\d{6,}-[0-9a-f]{16}")
_TMP_MANIFEST = re.compile(r"\.manifest\.[0-9a-f]{16}\.tmp")


def column_values(col: pa.Array | pa.ChunkedArray, dtype: type[np.generic]) -> np.ndarray:
    """The values of a fixed-width Arrow column without nulls, as NumPy ``dtype`` (a view
    for one chunk, else a copy). Read from the Arrow buffers: pyarrow's ``to_numpy`` and
    ``np.asarray(array)`` import pandas, most of a CLI search's start-up.

    Raises:
        IndexCorruptError: The column has nulls or its values are not ``dtype``-sized.
    """
    size = np.dtype(dtype).itemsize
    parts = []
    for chunk in col.chunks if isinstance(col, pa.ChunkedArray) else [col]:
        if chunk.null_count or getattr(chunk.type, "bit_width", 0) != 8 * size:
            raise IndexCorruptError(f"column of type {chunk.type} read as {np.dtype(dtype)}")
        buf = chunk.buffers()[1]
        if len(chunk) and buf is not None:
            parts.append(np.frombuffer(buf, dtype=dtype, count=len(chunk), offset=chunk.offset * size))
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class BatchStream:
    """A table written batch by batch as the batches are made (``write_index_dir``
    accepts one where it accepts a table), so a large table is never whole in memory."""

    def __init__(self, schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> None:
        self.schema, self._batches = schema, batches

    def replace_schema_metadata(self, metadata: Mapping) -> BatchStream:
        return BatchStream(self.schema.with_metadata(metadata), self._batches)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return iter(self._batches)


def _write_table(path: Path, table: pa.Table | BatchStream) -> None:
    if isinstance(table, pa.Table):
        from .dense import align_in_file  # int8 rows the search scans go on a 64-byte boundary

        for column in ("codes", "list_codes"):
            table = align_in_file(table, column)
    with pa.OSFile(str(path), "wb") as sink:
        with ipc.new_file(sink, table.schema) as writer:
            if isinstance(table, BatchStream):
                for batch in table:
                    writer.write_batch(batch)
            else:
                writer.write_table(table)
    _fsync(path)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``directory`` (released by the kernel if we die)."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    fd = os.open(directory / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _current(target: Path) -> dict[str, Any] | None:
    """The manifest now in ``target`` (unchecked), or ``None`` without a readable one."""
    try:
        body = json.loads((target / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def _ours(name: str) -> bool:
    return name in (MANIFEST, LOCK) or bool(_DATA_DIR.fullmatch(name) or _TMP_MANIFEST.fullmatch(name))


def write_index_dir(target: str | os.PathLike, tables: Mapping[str, pa.Table | BatchStream],
                    manifest: dict[str, Any]) -> Path:
    """Write ``tables`` (file name -> table) and ``manifest`` to ``target`` atomically.

    The files go to a new versioned subfolder; the manifest gains ``files`` (size and
    SHA-256 per file), ``generation``, ``save_id``, ``data`` (the subfolder) and a
    ``manifest_sha256`` over its own canonical JSON, and replaces ``manifest.json`` in one
    atomic step. Then the previous generation and leftovers of killed saves are removed.
    A manifest value may be a callable: it is called once the tables are written (work whose
    memory would otherwise add to theirs at the save's peak), and an entry it answers
    ``None`` is left out.

    Raises:
        IndexFormatError: ``target`` is a file, or a non-empty directory that is not an
            index (it is never overwritten).
    """
    target = Path(target).absolute()
    if target.exists() and not target.is_dir():
        raise IndexFormatError(f"{target} exists and is not a directory")
    target.mkdir(parents=True, exist_ok=True)
    with _locked(target):
        names = [p.name for p in target.iterdir()]
        if MANIFEST not in names and not all(_ours(n) for n in names):
            raise IndexFormatError(f"{target} is a non-empty directory that is not a toolsift index; "
                                   "refusing to overwrite it")
        prev = _current(target) or {}
        generation = prev.get("generation", 0)
        generation = (generation if isinstance(generation, int) else 0) + 1
        save_id = secrets.token_hex(8)
        data = f"v{generation:06d}-{save_id}"
        ddir = target / data
        tmp_manifest = target / f".manifest.{save_id}.tmp"
        ddir.mkdir()
        try:
            (ddir / LEASE).touch()
            files: dict[str, Any] = {}
            for name, table in tables.items():
                meta = dict(table.schema.metadata or {})
                meta[SAVE_ID_KEY] = save_id.encode()
                path = ddir / name
                _write_table(path, table.replace_schema_metadata(meta))
                files[name] = {"bytes": path.stat().st_size, "sha256": _sha256(path)}
            _fsync(ddir)
            late = {k: v() for k, v in manifest.items() if callable(v)}
            body = dict({k: late.get(k, v) for k, v in manifest.items() if late.get(k, v) is not None},
                        format=FORMAT_NAME, format_version=FORMAT_VERSION, generation=generation,
                        save_id=save_id, data=data, files=files)
            body["manifest_sha256"] = hashlib.sha256(_canonical(body)).hexdigest()
            text = json.dumps(body, indent=2, ensure_ascii=False) + "\n"
            (ddir / MANIFEST).write_text(text, encoding="utf-8")
            _fsync(ddir / MANIFEST)
            tmp_manifest.write_text(text, encoding="utf-8")
            _fsync(tmp_manifest)
            os.replace(tmp_manifest, target / MANIFEST)  # the commit
            _fsync(target)
        except BaseException:
            shutil.rmtree(ddir, ignore_errors=True)
            with contextlib.suppress(OSError):
                tmp_manifest.unlink()
            raise
        _clean(target, keep=data, prev=prev)
    return target


def _clean(target: Path, *, keep: str, prev: Mapping[str, Any]) -> None:
    """Remove every generation but ``keep`` and leftovers of killed or older saves."""
    for p in target.iterdir():
        if p.name != keep and (_DATA_DIR.fullmatch(p.name) or _TMP_MANIFEST.fullmatch(p.name)):
            if p.is_dir():
                _remove_generation(p)
            else:
                with contextlib.suppress(OSError):
                    p.unlink()
    if "data" not in prev:  # an index in the old flat layout: its files sit in target itself
        for name in prev.get("files", {}) if isinstance(prev.get("files"), Mapping) else ():
            if isinstance(name, str) and "/" not in name and name.endswith(".arrow"):
                with contextlib.suppress(OSError):
                    (target / name).unlink()
    # Sibling folders the flat-layout writer left when it was killed mid-save.
    for pattern in (f".{target.name}.tmp-*", f".{target.name}.old-*"):
        for p in target.parent.glob(pattern):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)


def _remove_generation(ddir: Path) -> bool:
    """Delete generation folder ``ddir`` unless a reader holds its lease; returns whether
    it was deleted (else a later save tries again)."""
    if fcntl is not None:
        try:
            fd = os.open(ddir / LEASE, os.O_RDONLY)
        except OSError:
            fd = None  # no lease file: written before leases, or a save killed early
        if fd is not None:
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    return False  # a reader is opening it: keep it for now
                shutil.rmtree(ddir, ignore_errors=True)  # under the lock: no reader can start
                return True
            finally:
                os.close(fd)
    shutil.rmtree(ddir, ignore_errors=True)
    return True


def _take_lease(ddir: Path) -> int | None:
    """A shared lease on generation ``ddir`` (an open fd), or ``None`` when it is gone or
    has no lease file."""
    try:
        fd = os.open(ddir / LEASE, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # waits only while a save is deleting it
        if os.fstat(fd).st_nlink == 0:  # deleted between our open and our lock
            os.close(fd)
            return None
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def leased_manifest(directory: str | os.PathLike, *, verify: bool = True) -> Iterator[tuple[dict[str, Any], Path]]:
    """:func:`read_manifest`, holding the generation's reader lease while the block runs:
    no save deletes its files meanwhile, and its manifest is the generation's own copy,
    so a save committing during the block changes nothing the reader sees.

    Generations written before leases (no ``.lease`` file), the old flat layout, and
    systems without ``flock`` fall back to :func:`read_manifest` on the current manifest.

    Raises:
        As :func:`read_manifest`; also IndexCorruptError when every attempt found the
        generation deleted before its lease could be taken.
    """
    directory = Path(directory)
    if not directory.exists():
        raise IndexNotFoundError(f"{directory} is not an index directory (it does not exist)")
    if not directory.is_dir():
        raise IndexFormatError(f"{directory} is not an index directory (it is a file)")
    for _ in range(_LEASE_ATTEMPTS):
        # The pointer must be sound itself (a replace is atomic: a bad checksum is damage).
        body = _parse_manifest(directory / MANIFEST, directory)
        data = body.get("data")
        if fcntl is None or not (isinstance(data, str) and _DATA_DIR.fullmatch(data)):
            yield read_manifest(directory, verify=verify)
            return
        ddir = directory / data
        fd = _take_lease(ddir)
        if fd is None:
            if ddir.is_dir() and not (ddir / LEASE).exists():  # written before leases
                yield read_manifest(directory, verify=verify)
                return
            continue  # deleted by a save that committed meanwhile: read the new manifest
        try:
            if (ddir / MANIFEST).is_file():
                yield _check_manifest(ddir / MANIFEST, directory, ddir, verify=verify)
            else:
                yield read_manifest(directory, verify=verify)
        finally:
            os.close(fd)
        return
    raise IndexCorruptError(f"{directory}: every generation vanished before it could be read "
                            f"({_LEASE_ATTEMPTS} attempts)")


def manifest_token(directory: str | os.PathLike) -> str | None:
    """Identifies the save ``manifest.json`` now points at (changes with every save)."""
    body = _current(Path(directory))
    if body is None:
        return None
    return f"{body.get('generation')}:{body.get('save_id')}:{body.get('manifest_sha256')}"


def read_manifest(directory: str | os.PathLike, *, verify: bool = True) -> tuple[dict[str, Any], Path]:
    """Read and check the manifest of an index directory.

    Args:
        directory: The index directory.
        verify: Also check every file's SHA-256 (sizes are always checked).

    Returns:
        ``(manifest, data directory)``: the folder holding the Arrow files.

    Raises:
        IndexNotFoundError: No directory at ``directory`` (a FileNotFoundError too).
        IndexFormatError: Not a directory, missing manifest, another format, a newer version.
        IndexCorruptError: A size, checksum or the manifest's own checksum differs.
    """
    directory = Path(directory)
    if not directory.exists():
        raise IndexNotFoundError(f"{directory} is not an index directory (it does not exist)")
    if not directory.is_dir():
        raise IndexFormatError(f"{directory} is not an index directory (it is a file)")
    return _check_manifest(directory / MANIFEST, directory, None, verify=verify)


def _check_manifest(mpath: Path, directory: Path, expect: Path | None, *,
                    verify: bool) -> tuple[dict[str, Any], Path]:
    """Parse and check the manifest at ``mpath`` (the index's, or a generation's copy,
    which must then name its own folder ``expect``) and the files it lists."""
    body = _parse_manifest(mpath, directory)
    data = body.get("data")
    ddir = directory / data if data else directory
    if expect is not None and ddir != expect:
        raise IndexCorruptError(f"{mpath}: names generation {data!r}, not its own folder {expect.name!r}")
    _check_files(body, mpath, ddir, verify=verify)
    return body, ddir


def _parse_manifest(mpath: Path, directory: Path) -> dict[str, Any]:
    """The manifest at ``mpath``, its own checksum, format and version checked."""
    try:
        text = mpath.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise IndexFormatError(f"{directory} is not an index directory: {MANIFEST} is missing") from None
    except UnicodeDecodeError as exc:
        raise IndexCorruptError(f"{mpath}: not valid UTF-8 ({exc})") from None
    except OSError as exc:
        raise IndexFormatError(f"{mpath}: cannot read ({exc.strerror or exc})") from None
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
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
    data = body.get("data")
    if data is not None and not (isinstance(data, str) and _DATA_DIR.fullmatch(data)):
        raise IndexCorruptError(f"{mpath}: 'data' must name a generation folder, got {data!r}")
    return body


def _check_files(body: dict[str, Any], mpath: Path, ddir: Path, *, verify: bool) -> None:
    """Sizes (and with ``verify`` SHA-256) of the files the manifest lists."""
    files = body.get("files", {})
    if not isinstance(files, dict):
        raise IndexCorruptError(f"{mpath}: 'files' must be an object")
    for name, meta in files.items():
        path = ddir / name
        try:
            size = path.stat().st_size
        except OSError:
            raise IndexCorruptError(f"{path}: file listed in the manifest is missing") from None
        if not isinstance(meta, dict) or size != meta.get("bytes"):
            raise IndexCorruptError(f"{path}: {size} bytes on disk, manifest says "
                                    f"{meta.get('bytes') if isinstance(meta, dict) else '?'} (truncated?)")
        if verify:
            try:
                digest = _sha256(path)
            except OSError:
                raise IndexCorruptError(f"{path}: file listed in the manifest is missing") from None
            if digest != meta.get("sha256"):
                raise IndexCorruptError(f"{path}: SHA-256 mismatch (the file is damaged)")


def open_table(directory: str | os.PathLike, name: str, *, mmap: bool, save_id: str | None = None,
               columns: Mapping[str, Any] | None = None, base_out: list[int] | None = None) -> pa.Table:
    """Open one Arrow IPC file of an index; memory-mapped (zero-copy) when ``mmap``
    (``base_out``: gets the mapping's address, so a buffer's file offset is its address
    minus it).

    Cheap structural checks always run: Arrow's own validation (offsets in range, valid
    UTF-8), the ``save_id`` the file was written by (when given), and the type of each
    column named in ``columns`` (a column name -> predicate on its Arrow type).

    Raises:
        IndexCorruptError: Unreadable, damaged, from another save, or of the wrong shape.
    """
    path = Path(directory) / name
    try:
        source = pa.memory_map(str(path), "r") if mmap else pa.OSFile(str(path), "rb")
        with source:
            if mmap and base_out is not None and path.stat().st_size:
                base_out.append(source.read_buffer(1).address)
                source.seek(0)
            reader = ipc.open_file(source)
            # Buffers of a memory map share its mapped region, which outlives close().
            table = reader.read_all()
        table.validate(full=True)
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError) as exc:
        raise IndexCorruptError(f"{path}: cannot read Arrow IPC file ({exc})") from None
    if save_id is not None:
        got = (table.schema.metadata or {}).get(SAVE_ID_KEY)
        if got != save_id.encode():
            raise IndexCorruptError(f"{path}: written by another save than the manifest's "
                                    "(a file copied in from another index?)")
    for cname, ok in (columns or {}).items():
        if cname not in table.column_names:
            raise IndexCorruptError(f"{path}: column {cname!r} is missing")
        if not ok(table.schema.field(cname).type):
            raise IndexCorruptError(f"{path}: column {cname!r} has type {table.schema.field(cname).type}")
    return table
