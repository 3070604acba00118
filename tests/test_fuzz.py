"""Issue 12, part 7: the fuzz suite. Hostile input must end in findings or a one-line error, never a traceback.

Classes of hostile input (auditor/testing/mutate.py: HOSTILE_MUTATORS, `duplicates`, `damaged_gzip`,
`pandas_parquet`): overlong lines, deep nesting, invalid UTF-8 (and lone-surrogate escapes), control characters,
ANSI escapes and bidi overrides in ids, huge or negative deal numbers and gaps, too many tricks/cards/claims/players,
truncated or corrupt gzip, pandas-written Parquet, random JSON values in every field (also by hypothesis), and
duplicate records; mixed with the replay's own mutators (revokes, wrong scores, bad decks...).

Properties, for every input:
- no traceback: the reference engine, the batch engine and the column pipeline (also its worker-process reader)
  through the library, the audit through the library on a sample, and `auditor replay/audit` on a sample, end with
  findings or an error of auditor.errors' hierarchy (CLI: a documented exit code, 0, 1 or 3, and no traceback);
- no accounting error: `deals` equals the records read (the non-blank lines), each is either a replayed deal or
  exactly one `bad_record` finding, and every finding's source names a real record line;
- the batch engine's document equals the reference engine's.

The fast tier runs a seeded sample (a few seconds); `-m slow` mutates at least 100,000 records and prints the
numbers (records mutated, tracebacks, accounting errors, engine differences, time).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import traceback
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from auditor.errors import AuditorError

EXIT_CODES = {0, 1, 3}  # outputs.md: 0 nothing found, 1 findings or flags, 3 no input could be read


def jsonl_lines(data: bytes) -> list[bytes]:
    """The lines of a JSON Lines file as the reader numbers them (1-based: index + 1)."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def records_in(lines: list[bytes]) -> list[int]:
    """The line numbers that are records (not blank; a byte-order mark on line 1 does not count)."""
    out = []
    for i, line in enumerate(lines, 1):
        if i == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        if line.strip():
            out.append(i)
    return out


def _gunzip_prefix(data: bytes) -> bytes:
    """What a lenient reader can inflate of a (possibly damaged, multi-member) gzip stream: every byte before the
    damage (the piece holding the damage is inflated byte by byte, so that its output before the damage is kept)."""
    out = []
    while data[:2] == b"\x1f\x8b":
        d = zlib.decompressobj(31)
        pos, broken = 0, False
        while pos < len(data) and not d.eof and not broken:
            piece = data[pos:pos + 64]
            try:
                out.append(d.copy().decompress(piece))
                d.decompress(piece)
            except zlib.error:
                for b in range(len(piece)):
                    try:
                        out.append(d.decompress(piece[b:b + 1]))
                    except zlib.error:
                        break
                broken = True
            pos += len(piece)
        if broken or not d.eof:
            break
        data = d.unused_data + data[pos:]
    return b"".join(out)


def _tb(where: str, e: BaseException) -> str:
    last = traceback.extract_tb(e.__traceback__)[-1:]
    at = f" at {last[0].filename.rsplit('/auditor/', 1)[-1]}:{last[0].lineno}" if last else ""
    return f"traceback: {where}: {type(e).__name__}: {str(e)[:160]}{at}"


def _source_line(source: str | None, path: str) -> int | None:
    if not source or not source.startswith(path + ":"):
        return None
    tail = source[len(path) + 1:]
    m = re.match(r"(\d+)", tail)
    return int(m.group(1)) if m else None


def replay_all(path: str, parallel_reader: bool = False):
    """The three documents (reference, batch, pipeline), each a dict or the problem string of its traceback."""
    from auditor.dealog import read_records
    from auditor.fast import pipeline, read
    from auditor.replay.run import replay_records

    def parallel():  # the worker-process reader of large plain files, on small segments
        saved = read.PARALLEL_MIN_BYTES, read.SEGMENT_BYTES
        read.PARALLEL_MIN_BYTES, read.SEGMENT_BYTES = 1, 2048
        try:
            return pipeline.replay_paths([path])
        finally:
            read.PARALLEL_MIN_BYTES, read.SEGMENT_BYTES = saved

    docs = {}
    runs = [("reference", lambda: replay_records(read_records([path]), "reference")),
            ("batch", lambda: replay_records(read_records([path]), "batch")),
            ("pipeline", lambda: pipeline.replay_paths([path]))]
    if parallel_reader:
        runs.append(("parallel", parallel))
    for name, run in runs:
        try:
            rep = run()
            docs[name] = (rep.to_json(), rep)
        except AuditorError as e:  # an error of the hierarchy is a one-line error, not a traceback
            docs[name] = (None, str(e))
        except Exception as e:  # noqa: BLE001 - what the fuzz is looking for
            docs[name] = _tb(f"{name} replay", e)
    return docs


def check_file(path: str, kind: str = "jsonl", parallel_reader: bool = False) -> list[str]:
    """Every problem of one input file (see the module docstring)."""
    path = str(path)
    problems: list[str] = []
    data = Path(path).read_bytes() if kind != "parquet" else b""
    if kind == "gz":
        lines = jsonl_lines(_gunzip_prefix(data))
    else:
        lines = jsonl_lines(data)
    rec_lines = set(records_in(lines)) if kind != "parquet" else set()
    docs = replay_all(path, parallel_reader)
    for got in docs.values():
        if isinstance(got, str):
            problems.append(got)
    ok = {name: got[0] for name, got in docs.items() if not isinstance(got, str) and got[0] is not None}
    if "reference" not in ok:
        return problems
    ref = ok["reference"]
    for name in ("batch", "pipeline", "parallel"):
        if name in ok and ok[name] != ref:
            diff = [k for k in ref if ok[name].get(k) != ref.get(k)]
            problems.append(f"engines: {name} differs from reference in {diff}")
    # accounting, on the reference document (the others equal it or were reported)
    rep = docs["reference"][1]
    bad = [f for f in ref["findings"] if f["code"] == "bad_record"]
    replayed = len(rep.results)
    if ref["deals"] != replayed + len(bad):
        problems.append(f"accounting: deals {ref['deals']} != replayed {replayed} + bad_record {len(bad)}")
    if sum(g["deals"] for g in ref["games_summary"]) != replayed:
        problems.append(f"accounting: games_summary counts {sum(g['deals'] for g in ref['games_summary'])} deals, "
                        f"{replayed} replayed")
    if kind == "jsonl":
        if ref["deals"] != len(rec_lines):
            problems.append(f"accounting: deals {ref['deals']} != {len(rec_lines)} non-blank lines")
        bad_lines = Counter(_source_line(f["source"], path) for f in bad)
        if bad_lines.get(None):
            problems.append(f"accounting: a bad_record without a line: {[f['source'] for f in bad][:3]}")
        twice = [n for n, c in bad_lines.items() if n is not None and c > 1]
        if twice:
            problems.append(f"accounting: lines {twice[:5]} are more than one bad_record")
        deal_lines = {r.deal.line for r in rep.results}
        if deal_lines & set(bad_lines):
            problems.append(f"accounting: lines {sorted(deal_lines & set(bad_lines))[:5]} both replayed and bad")
        if (deal_lines | set(bad_lines)) - {None} != rec_lines:
            missing = sorted(rec_lines - deal_lines - set(bad_lines))
            extra = sorted((deal_lines | set(bad_lines)) - rec_lines - {None})
            problems.append(f"accounting: lines read but not accounted {missing[:5]}, accounted but no record "
                            f"{extra[:5]}")
        for f in ref["findings"]:
            n = _source_line(f["source"], path)
            if n is None or n not in rec_lines:
                problems.append(f"accounting: finding {f['code']} at {f['source']!r}: no such record line")
                break
    elif kind == "gz":
        for f in ref["findings"]:
            n = _source_line(f["source"], path)
            if n is None or n > len(lines) + 1:
                problems.append(f"accounting: finding {f['code']} at {f['source']!r}: beyond the stream")
                break
    else:  # parquet: rows
        for f in ref["findings"]:
            n = _source_line(f["source"], path)
            if f["code"] != "bad_record" and n is None:
                problems.append(f"accounting: finding {f['code']} at {f['source']!r}: no row")
                break
    return problems


def check_audit(path: str, want_deals: int | None = None) -> list[str]:
    """The audit through the library (the CLI's batch path): a document that counts every record read (its replay
    block equal to the reference replay's), or an error of the hierarchy."""
    from auditor.audit import audit_paths
    from auditor.dealog import read_records
    from auditor.replay.run import replay_records

    try:
        report = audit_paths([str(path)], seed=0)
        doc = report.to_json(games=False)
    except AuditorError:
        return []
    except Exception as e:  # noqa: BLE001
        return [_tb("audit", e)]
    out = []
    if want_deals is not None and doc["deals"] != want_deals:
        out.append(f"accounting: audit deals {doc['deals']} != {want_deals} records read")
    ref = replay_records(read_records([str(path)]), "reference").to_json()
    if doc["replay"]["deals"] != ref["deals"] or doc["replay"]["findings"] != ref["findings"]:
        out.append("engines: the audit's replay block differs from the reference replay")
    return out


def run_cli(args: list[str], timeout: int = 300):
    """One `auditor ...` run in a subprocess (no stdin): (problems, completed process). A documented exit code and
    no traceback."""
    r = subprocess.run([sys.executable, "-m", "auditor", *args], capture_output=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    err = r.stderr.decode("utf-8", "replace")
    out = []
    if "Traceback (most recent call last)" in err:
        tail = err.strip().splitlines()[-1][:200]
        out.append(f"traceback: cli {args[0]}: {tail}")
    if r.returncode not in EXIT_CODES:
        out.append(f"exit: cli {args[0]} exited {r.returncode}: {err.strip()[-200:]}")
    return out, r


# ---------------------------------------------------------------- inputs

from auditor import dealog  # noqa: E402
from auditor.testing.generate import PLAYER_COUNTS, Style, random_log  # noqa: E402
from auditor.testing.mutate import (HOSTILE_LIMIT, HOSTILE_MUTATORS, damaged_gzip, hostile_log,  # noqa: E402
                                    pandas_parquet, to_jsonl)

CONFIGS = [(g, p, n) for (g, p), counts in PLAYER_COUNTS.items() for n in counts]
CLASSES = sorted(HOSTILE_MUTATORS)
from auditor.testing.mutate import RECORD_MUTATORS  # noqa: E402

MUTATED = set(HOSTILE_MUTATORS) | set(RECORD_MUTATORS) | {"pandas_parquet"}  # record mutators (not log ones)


@pytest.fixture
def small_limit():
    """The record-size limit at HOSTILE_LIMIT (overlong lines of kilobytes, not megabytes), restored after."""
    saved = dealog.MAX_RECORD_BYTES
    dealog.set_max_record_bytes(HOSTILE_LIMIT)
    yield HOSTILE_LIMIT
    dealog.set_max_record_bytes(saved)


def clean_records(rng: np.random.Generator, games: int, tag: str, first: int = 0) -> list[dict]:
    """`games` short games, each of another preset and player count (cycling through them all)."""
    recs: list[dict] = []
    for k in range(games):
        g, p, n = CONFIGS[(first + k) % len(CONFIGS)]
        recs += random_log(rng, 1, game=g, preset=p, n=n, style=Style(revoke_rate=0.03, claim_revokes=0.3),
                           id_prefix=f"{tag}/{k}/")
    return recs


def hostile_file(tmp_path: Path, seed: int, games: int = 4, rate: float = 0.5, mutators=None, log_mutators=None,
                 counts=None, name: str | None = None) -> Path:
    rng = np.random.default_rng(seed)
    recs = clean_records(rng, games, f"s{seed}", first=seed)
    lines = hostile_log(rng, recs, rate=rate, mutators=mutators, log_mutators=log_mutators, counts=counts,
                        log_mutations=max(2, games // 4))
    path = tmp_path / (name or f"h{seed}.jsonl")
    path.write_bytes(to_jsonl(lines))
    return path


KNOWN: dict = {}  # problems found by this suite in code other work owns; xfail (not fail) while they remain


def _known(problem: str) -> str | None:
    return next((k for k, (rx, _) in KNOWN.items() if rx.search(problem)), None)


def _assert_none(problems: list[str], what: str):
    """No problem; or, when every problem is a known one (KNOWN), an xfail naming it."""
    unknown = [x for x in problems if _known(x) is None]
    assert not unknown, f"{what}: {len(unknown)} problems, e.g.\n" + "\n".join(unknown[:8])
    if problems:
        kinds = Counter(_known(x) for x in problems)
        pytest.xfail("; ".join(f"{KNOWN[k][1]} ({n} times)" for k, n in kinds.items()))


# ---------------------------------------------------------------- the fast tier: a seeded sample


@pytest.mark.parametrize("cls", CLASSES)
def test_hostile_class(tmp_path, small_limit, cls):
    """Each hostile class alone, in several seeded logs of every preset."""
    problems = []
    for seed in range(6):
        path = hostile_file(tmp_path, zlib.crc32(cls.encode()) + seed, games=3, rate=0.6, mutators=[cls])
        problems += [f"{path.name}: {x}" for x in check_file(str(path))]
    _assert_none(problems, cls)


def test_duplicate_records(tmp_path, small_limit):
    """The same line again, the same game and deal number with other content, a key given twice in an object; and
    the same file given twice."""
    problems = []
    for seed in range(6):
        path = hostile_file(tmp_path, 900 + seed, games=3, rate=0.0, log_mutators=["duplicates"])
        problems += [f"{path.name}: {x}" for x in check_file(str(path))]
    _assert_none(problems, "duplicates")
    from auditor.dealog import read_records
    from auditor.fast import pipeline
    from auditor.replay.run import replay_records

    one = replay_records(read_records([str(path)]), "reference").to_json()
    two = replay_records(read_records([str(path), str(path)]), "reference").to_json()
    assert two["deals"] == 2 * one["deals"]
    assert pipeline.replay_paths([str(path), str(path)]).to_json() == two


def test_everything_mixed_and_the_parallel_reader(tmp_path, small_limit):
    """All mutators at once (hostile and the replay's own), also read by the worker-process reader on small
    segments."""
    problems = []
    for seed in range(3):
        path = hostile_file(tmp_path, 300 + seed, games=12, rate=0.5)
        problems += [f"{path.name}: {x}" for x in check_file(str(path), parallel_reader=True)]
    _assert_none(problems, "mixed")


FILE_SHAPES = {
    "empty": lambda recs: b"",
    "bom only": lambda recs: b"\xef\xbb\xbf",
    "blank lines": lambda recs: b"\n\n  \n\t\n\r\n\x0b\x0c\n",
    "crlf": lambda recs: to_jsonl(recs).replace(b"\n", b"\r\n"),
    "bom and crlf": lambda recs: b"\xef\xbb\xbf" + to_jsonl(recs).replace(b"\n", b"\r\n"),
    "bom on line 2": lambda recs: to_jsonl(recs[:1]) + b"\xef\xbb\xbf" + to_jsonl(recs[1:]),
    "no final newline": lambda recs: to_jsonl(recs)[:-1],
    "nul lines": lambda recs: to_jsonl(recs) + b"\x00\n\x00\x00\x00\n",
    "non-breaking space line": lambda recs: to_jsonl(recs) + "\u00a0\n\u3000\n".encode(),
    "lone cr separators": lambda recs: to_jsonl(recs).replace(b"\n", b"\r", 2),
    "two records on a line": lambda recs: to_jsonl(recs[:1])[:-1] + to_jsonl(recs[1:]),
    "utf-16": lambda recs: to_jsonl(recs[:2]).decode().encode("utf-16"),
    "latin-1 id": lambda recs: to_jsonl(recs).replace(b'"players":["', b'"players":["\xe9', 1),
}


@pytest.mark.parametrize("shape", sorted(FILE_SHAPES))
def test_file_shapes(tmp_path, shape):
    """Whole-file oddities: empty, a byte-order mark, blank and whitespace lines, CRLF, no final newline, NUL
    lines, two records on one line, UTF-16."""
    rng = np.random.default_rng(zlib.crc32(shape.encode()))
    recs = clean_records(rng, 2, "shape")
    path = tmp_path / "shape.jsonl"
    path.write_bytes(FILE_SHAPES[shape](recs))
    _assert_none(check_file(str(path)), shape)


def test_overlong_lines_at_the_default_limit(tmp_path):
    """The real limit (1 MiB): a line one byte over is a bad_record, one at the limit is a record."""
    import orjson

    rng = np.random.default_rng(12)
    recs = clean_records(rng, 1, "long")
    limit = dealog.MAX_RECORD_BYTES
    lines = []
    for extra in (0, 1, 3 * limit):
        base = len(orjson.dumps(dict(recs[0], x_pad="")))
        lines.append(orjson.dumps(dict(recs[0], x_pad="p" * (limit - base + extra))))
    lines += recs
    path = tmp_path / "long.jsonl"
    path.write_bytes(to_jsonl(lines))
    _assert_none(check_file(str(path)), "overlong at the default limit")
    from auditor.dealog import read_records

    got = list(read_records([str(path)]))
    assert got[0].deal is not None and got[1].deal is None and got[2].deal is None
    assert "longer than the record-size limit" in got[1].error


def test_damaged_gzip(tmp_path, small_limit):
    """Truncated, bit-flipped, wrong CRC, garbage after, several members, header only, gzip of gzip."""
    problems = []
    for seed in range(16):
        rng = np.random.default_rng(500 + seed)
        lines = hostile_log(rng, clean_records(rng, 3, f"gz{seed}", first=seed), rate=0.3)
        path = tmp_path / f"d{seed}.jsonl.gz"
        path.write_bytes(damaged_gzip(rng, to_jsonl(lines)))
        problems += [f"{path.name}: {x}" for x in check_file(str(path), kind="gz")]
    _assert_none(problems, "damaged gzip")


def test_pandas_written_parquet(tmp_path):
    """Parquet written by pandas from the records (its index column, NaN and float deal numbers, a column dropped
    or of another type)."""
    pytest.importorskip("pandas")
    problems, written = [], 0
    for seed in range(8):
        rng = np.random.default_rng(700 + seed)
        recs = clean_records(rng, 3, f"pq{seed}", first=seed)
        path = tmp_path / f"p{seed}.parquet"
        if not pandas_parquet(rng, recs, path):
            continue
        written += 1
        problems += [f"{path.name}: {x}" for x in check_file(str(path), kind="parquet")]
    assert written >= 4
    _assert_none(problems, "pandas parquet")


def _json_values():
    from hypothesis import strategies as st

    leaf = (st.none() | st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70)
            | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
            | st.sampled_from(["As", "Th", "10d", "scotch_whist", "all_fours", "foster", "deal-log/1", "stand"]))
    return st.recursive(leaf, lambda kids: st.lists(kids, max_size=5) | st.dictionaries(
        st.sampled_from(["cards", "turn_up", "revoke", "trick", "points", "totals", "winner", "x"]), kids,
        max_size=4), max_leaves=12)


def test_random_json_in_every_field(tmp_path_factory):
    """hypothesis: any JSON value in any top-level field of a clean record (derandomized: the same examples every
    run)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from auditor.dealog import FIELD_ORDER

    rng = np.random.default_rng(31)
    base = clean_records(rng, 6, "hyp")
    tmp = tmp_path_factory.mktemp("hyp")
    found: list[str] = []

    @settings(max_examples=30, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.integers(0, len(base) - 1), st.lists(st.tuples(st.sampled_from(FIELD_ORDER), _json_values()),
                                                   min_size=1, max_size=3))
    def one(i, changes):
        recs = [dict(r) for r in base]
        for key, value in changes:
            recs[i][key] = value
        path = tmp / "h.jsonl"
        path.write_bytes(to_jsonl(recs))
        found.extend(f"{changes!r:.200}: {x}" for x in check_file(str(path)))

    one()
    _assert_none(found, "random JSON values")


def test_audit_through_the_library(tmp_path, small_limit):
    path = hostile_file(tmp_path, 41, games=8, rate=0.5)
    want = len(records_in(jsonl_lines(path.read_bytes())))
    _assert_none(check_audit(str(path), want), "audit")


@pytest.mark.parametrize("deal_no,damaged", [(2 ** 31, True), (2 ** 62, False), (2 ** 64 - 1, False),
                                             (2 ** 40, True)])
def test_audit_huge_deal_numbers(tmp_path, deal_no, damaged):
    """One record with a deal number past int32 or past 2**62 (a deck one card short when `damaged`: the reference
    engine replays it): the audit counts it, no traceback."""
    rng = np.random.default_rng(1)
    rec = dict(clean_records(rng, 1, "big", first=2)[0], deal_no=deal_no)
    if damaged:
        rec["deck"] = rec["deck"][:-1]
    path = tmp_path / "big.jsonl"
    path.write_bytes(to_jsonl([rec]))
    _assert_none(check_file(str(path)) + check_audit(str(path), 1), f"deal_no {deal_no}")


# what a terminal or a Markdown table must not receive raw from a log: C0/C1 controls (but newline and tab), DEL,
# bidi embeddings, overrides, isolates and marks
RAW_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def test_cli_sample(tmp_path):
    """`auditor replay` (terminal) and `auditor audit --json --out x.md` on hostile logs, a damaged .gz and an
    all-garbage file: documented exit codes, no traceback, the document accounts for every line, and neither the
    terminal nor the Markdown passes on a raw control or bidi character from the log's ids."""
    rng = np.random.default_rng(77)
    mixed = hostile_file(tmp_path, 77, games=8, rate=0.6, mutators=CLASSES + ["broken_line", "schema_break"],
                         name="mixed.jsonl")
    ids = hostile_file(tmp_path, 78, games=4, rate=0.9, mutators=["odd_ids"], name="ids.jsonl")
    gz = tmp_path / "d.jsonl.gz"
    gz.write_bytes(damaged_gzip(rng, mixed.read_bytes()))
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\xff\xfe\x00\n{\n[[[[[[\n" + b"[" * 100_000 + b"\n\x1b[2J" + "\u202e".encode() + b"\n")
    problems, r = run_cli(["replay", str(mixed), str(ids), str(gz), str(garbage)])
    if RAW_CONTROLS.search(r.stdout.decode("utf-8", "replace")):
        problems.append(f"terminal: raw control character {RAW_CONTROLS.search(r.stdout.decode()).group()!r}")
    md = tmp_path / "r.md"
    p, r = run_cli(["audit", "--json", str(mixed), str(ids), "--out", str(md)])
    problems += p
    if r.returncode in (0, 1):
        doc = json.loads(r.stdout)
        want = sum(len(records_in(jsonl_lines(f.read_bytes()))) for f in (mixed, ids))
        if doc["deals"] != want:
            problems.append(f"accounting: cli audit deals {doc['deals']} != {want} lines")
        hit = RAW_CONTROLS.search(md.read_text(encoding="utf-8"))
        if hit:
            problems.append(f"markdown: raw control character {hit.group()!r}")
    _assert_none(problems, "cli")


# ---------------------------------------------------------------- the slow tier: at least 100,000 mutated records


@pytest.mark.slow
def test_fuzz_100k(tmp_path, small_limit, capsys):
    """At least 100,000 mutated records, every class, through the three engines (and the parallel reader, the
    gzip reader, pandas Parquet, the audit and the CLI on samples). Prints the numbers."""
    t0 = time.time()
    counts: Counter = Counter()
    problems: list[str] = []
    seed, files = 0, 0
    while sum(v for k, v in counts.items() if k in MUTATED) < 100_000:
        c: dict = {}
        path = hostile_file(tmp_path, 10_000 + seed, games=60, rate=0.7, counts=c, name="slow.jsonl")
        counts.update(c)
        files += 1
        problems += [f"seed {10_000 + seed}: {x}" for x in check_file(str(path), parallel_reader=seed % 10 == 0)]
        if seed % 25 == 0:
            problems += [f"seed {10_000 + seed}: {x}" for x in check_audit(str(path))]
            rng = np.random.default_rng(seed)
            gz = tmp_path / "slow.jsonl.gz"
            gz.write_bytes(damaged_gzip(rng, path.read_bytes()))
            problems += [f"seed {10_000 + seed} gz: {x}" for x in check_file(str(gz), kind="gz")]
            pq = tmp_path / "slow.parquet"
            recs = clean_records(rng, 6, f"pq{seed}", first=seed)
            if pandas_parquet(rng, recs, pq):
                counts["pandas_parquet"] += len(recs)
                problems += [f"seed {10_000 + seed} parquet: {x}" for x in check_file(str(pq), kind="parquet")]
        if seed % 100 == 0:
            problems += [f"seed {10_000 + seed} cli: {x}" for x in run_cli(["replay", "--json", str(path)])[0]]
        seed += 1
    kinds = Counter(x.split(": ", 2)[1].split(":")[0] for x in problems)
    mutated = sum(v for k, v in counts.items() if k in MUTATED)
    with capsys.disabled():
        print(f"\nfuzz slow tier: {mutated} records mutated in {files} logs, {time.time() - t0:.0f} s; "
              f"tracebacks {kinds['traceback']}, accounting errors {kinds['accounting']}, engine differences "
              f"{kinds['engines']}, other {sum(kinds.values()) - kinds['traceback'] - kinds['accounting'] - kinds['engines']}")
        print("by mutator: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        known = Counter(_known(x) for x in problems if _known(x))
        if known:
            print("known (xfail): " + ", ".join(f"{k} {n}" for k, n in known.items()))
        for x in [x for x in problems if not _known(x)][:20] + [x for x in problems if _known(x)][:3]:
            print("  " + x[:300])
    _assert_none(problems, "slow fuzz")
