"""Integrity of checkpoint folders: every file fsynced and listed with its SHA-256 in
``checksums.json`` (written last), and a check of a folder against that list. Used by the
RL loop's training states (``core.checkpoint``) and by every saved model checkpoint
(``models.factory.save_checkpoint``), so a corrupt checkpoint is reported by path on load
instead of being trained from."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

__all__ = ["CHECKSUMS", "seal", "verify"]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


CHECKSUMS = "checksums.json"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name != CHECKSUMS)


def _sealed_digests(folder: Path) -> dict[Path, str]:
    """Digests already listed by folders under ``folder`` that were sealed on their own
    (a training state's ``model/``, sealed by ``save_checkpoint``), by absolute path."""
    known: dict[Path, str] = {}
    for listing in folder.rglob(CHECKSUMS):
        if listing.parent != folder:
            sums = json.loads(listing.read_text(encoding="utf-8"))
            known.update({listing.parent / rel: digest for rel, digest in sums.items()})
    return known


def seal(folder: Path) -> None:
    """fsync every file and folder under ``folder``, then write its checksums (fsynced).
    A file inside a folder that was sealed already keeps that digest rather than being
    read again (a model's weights are hashed once per save)."""
    known = _sealed_digests(folder)
    sums = {}
    for p in _files(folder):
        sums[str(p.relative_to(folder))] = known.get(p) or _sha256(p)
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    with open(folder / CHECKSUMS, "w", encoding="utf-8") as f:
        json.dump(sums, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    for d in sorted({p.parent for p in _files(folder)} | {folder}):
        _fsync_dir(d)


def verify(folder: Path) -> str | None:
    """None when every file listed in ``checksums.json`` is there and matches; else why not."""
    try:
        sums = json.loads((folder / CHECKSUMS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"{CHECKSUMS} missing or unreadable"
    if not isinstance(sums, dict) or not sums:
        return f"{CHECKSUMS} is malformed"
    for rel, digest in sums.items():
        p = folder / rel
        if not p.is_file():
            return f"{rel} is missing"
        if _sha256(p) != digest:
            return f"{rel} does not match its checksum"
    return None
