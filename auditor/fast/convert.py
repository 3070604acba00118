"""`auditor convert IN OUT`: deal-log/1 between JSON Lines (.jsonl, .jsonl.gz) and Parquet (.parquet).

Lossless in the sense of the format: every valid record comes out as its canonical deal-log/1 object (key order,
card spellings; unknown top-level fields kept), every line that is not a valid record comes out byte for byte as
it was read (in Parquet: the `raw` column), in the same order. Blank lines are not records and are not kept. What
cannot be kept -- a file that cannot be opened, a gzip stream that breaks off -- is reported, never dropped
silently. Streaming: one chunk of records in memory at a time. The output is written to a hidden temporary file
beside it (`auditor.atomic`), fsynced and renamed at the end, so a failed or interrupted conversion leaves no
half-written output, no temporary file, and an older file of the same name as it was.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

import orjson

from ..atomic import atomic_path
from ..parquet import Writer
from .cols import Chunk, Registry, row_to_obj
from .read import iter_chunks

FORMATS = {".parquet": "parquet", ".jsonl": "jsonl", ".jsonl.gz": "jsonl.gz", ".gz": "jsonl.gz"}


def kind_of(path: str) -> str | None:
    p = str(path).lower()
    for ext in (".jsonl.gz", ".parquet", ".jsonl", ".gz"):
        if p.endswith(ext):
            return FORMATS[ext]
    return None


@dataclass
class Converted:
    records: int = 0  # records written
    raw: int = 0  # of which kept as the line that was read (not valid records)
    lost: list[str] = field(default_factory=list)  # what could not be kept: "source: reason"


def convert_file(src: str, dst: str, rows: int = 32768) -> Converted:
    out_kind = kind_of(dst)
    if out_kind is None:
        raise ValueError(f"{dst}: the output must end in .jsonl, .jsonl.gz or .parquet")
    reg = Registry()
    res = Converted()
    with atomic_path(dst) as tmp:  # issue 12: a hidden temporary file beside dst, fsynced and renamed at the end
        _convert_into(src, tmp, out_kind, reg, res, rows)
    return res


def _convert_into(src: str, tmp: str, out_kind: str, reg: Registry, res: Converted, rows: int) -> None:
    """Write the records of `src` to `tmp` as `out_kind`; the file is closed on success and on failure (then
    `atomic_path` removes it)."""
    chunks = _tallied(iter_chunks([src], reg, keep_all=True, rows=rows, raw_lines=True), res)
    if out_kind == "parquet":
        writer = Writer(tmp)
        try:
            for ch in chunks:
                res.records += writer.write(ch, reg)
        finally:
            writer.close()
        return
    with open(tmp, "wb") as raw_f:
        if out_kind == "jsonl.gz":
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw_f, mtime=0) as gz:
                _write_lines(chunks, gz, reg, res)
        else:
            _write_lines(chunks, raw_f, reg, res)


def _tallied(chunks: Iterator[Chunk], res: Converted) -> Iterator[Chunk]:
    """The chunks, each counted first: its bad lines kept as read (`raw`) and what cannot be kept (`lost`)."""
    for ch in chunks:
        for i, rec in ch.slow.items():
            if rec.deal is None and i not in ch.raw_line:
                res.lost.append(f"{rec.source}: {rec.error}")
            elif rec.deal is None:
                res.raw += 1
        yield ch


def _write_lines(chunks: Iterator[Chunk], f: BinaryIO | gzip.GzipFile, reg: Registry, res: Converted) -> None:
    """The records as JSON Lines: canonical records, bad lines as read."""
    for ch in chunks:
        lines = []
        for i in range(ch.n):
            if ch.status[i] == 0:
                lines.append(orjson.dumps(row_to_obj(ch, i, reg)))
                continue
            rec = ch.slow[i]
            if rec.deal is not None:
                lines.append(orjson.dumps(rec.deal.to_canonical()))
            elif i in ch.raw_line:
                lines.append(ch.raw_line[i].removesuffix(b"\n"))
        if lines:
            f.write(b"\n".join(lines) + b"\n")
            res.records += len(lines)
