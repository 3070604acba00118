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
from dataclasses import dataclass, field

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
    from ..atomic import atomic_path
    from .cols import Registry

    out_kind = kind_of(dst)
    if out_kind is None:
        raise ValueError(f"{dst}: the output must end in .jsonl, .jsonl.gz or .parquet")
    reg = Registry()
    res = Converted()
    with atomic_path(dst) as tmp:  # issue 12: a hidden temporary file beside dst, fsynced and renamed at the end
        _convert_into(src, tmp, out_kind, reg, res, rows)
    return res


def _convert_into(src: str, tmp: str, out_kind: str, reg, res: Converted, rows: int) -> None:
    import orjson

    from .cols import row_to_obj
    from .pipeline import iter_chunks

    writer = None
    raw_f = None
    f = None
    try:
        if out_kind == "parquet":
            from ..parquet import Writer

            writer = Writer(tmp)
        else:
            raw_f = open(tmp, "wb")
            f = gzip.GzipFile(filename="", mode="wb", fileobj=raw_f, mtime=0) if out_kind == "jsonl.gz" else raw_f
        for ch in iter_chunks([src], reg, keep_all=True, rows=rows, raw_lines=True):
            for i, rec in ch.slow.items():
                if rec.deal is None and i not in ch.raw_line:
                    res.lost.append(f"{rec.source}: {rec.error}")
                elif rec.deal is None:
                    res.raw += 1
            if writer is not None:
                res.records += writer.write(ch, reg)
                continue
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
                else:
                    continue
            if lines:
                f.write(b"\n".join(lines) + b"\n")
                res.records += len(lines)
    finally:  # closed on success and on failure (atomic_path then removes the file)
        if f is not None:
            f.close()
        if raw_f is not None and raw_f is not f:
            raw_f.close()
        if writer is not None:
            writer.close()
