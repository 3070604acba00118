"""The saved-counts file (auditor/countfile.py, issue 15): trees come back equal (types, dtypes, shapes, bit-exact
floats), every refusal is one line of CountsFileError, a failed write leaves no file, and every detector of the
registry finalizes loaded counts to the same results as the counts it made."""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import os
import struct
import sys
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from auditor import __version__
from auditor import countfile as cf
from auditor.countfile import CountsFileError, load_counts, save_counts
from auditor.detectors.base import Trials
from auditor.errors import InputError
from auditor.facts import Config


# ---------------------------------------------------------------- exact equality of trees


def same(a, b, where="counts"):
    """a and b are the same tree: same types everywhere, same dtypes and shapes, floats bit for bit."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.dtype.str == b.dtype.str, f"{where}: dtype {a.dtype} != {b.dtype}"
        assert a.shape == b.shape, f"{where}: shape {a.shape} != {b.shape}"
        if a.dtype.kind == "O":
            for i, (x, y) in enumerate(zip(a.flat, b.flat, strict=True)):
                same(x, y, f"{where}.flat[{i}]")
        else:
            assert a.tobytes() == b.tobytes(), f"{where}: values differ"
            assert b.flags.writeable and b.flags.c_contiguous and b.flags.aligned, f"{where}: flags {b.flags}"
    elif isinstance(a, np.generic):
        assert a.dtype.str == b.dtype.str and a.tobytes() == b.tobytes(), f"{where}: {a!r} != {b!r}"
    elif isinstance(a, float):
        assert struct.pack("<d", a) == struct.pack("<d", b), f"{where}: {a!r} != {b!r}"
    elif isinstance(a, dict):
        assert len(a) == len(b), f"{where}: {len(a)} keys != {len(b)}"
        for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True):
            same(ka, kb, f"{where} key {ka!r}")
            same(va, vb, f"{where}[{ka!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{where}[{i}]")
    elif isinstance(a, (set, frozenset)):
        assert a == b, f"{where}: {a!r} != {b!r}"
        assert sorted(map(repr, a)) == sorted(map(repr, b)), f"{where}: {a!r} != {b!r}"
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def roundtrip(tmp_path, counts, meta=None, blobs=None, name="c.parquet"):
    path = tmp_path / name
    save_counts(path, counts, meta or {}, blobs)
    return load_counts(path)


# ---------------------------------------------------------------- hypothesis: random trees


def _float_bits():
    return st.integers(0, 2**64 - 1).map(lambda u: struct.unpack("<d", struct.pack("<Q", u))[0])


FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), _float_bits(),
                   st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324]))
INTS = st.one_of(st.integers(-2**63, 2**63 - 1), st.integers(), st.sampled_from([2**63, -2**63 - 1, 2**200, -2**64]))
TEXT = st.one_of(st.text(max_size=8), st.text(st.characters(codec=None, min_codepoint=0xD800, max_codepoint=0xDFFF),
                                              max_size=2), st.just("é\ud800x"))
HASHABLE_LEAVES = st.one_of(TEXT, INTS, st.floats(allow_nan=False), st.booleans(), st.none())
HASHABLE = st.recursive(HASHABLE_LEAVES, lambda inner: st.tuples(inner, inner) | st.tuples(inner), max_leaves=4)

DTYPES = st.one_of(
    hnp.boolean_dtypes(), hnp.integer_dtypes(endianness="="), hnp.unsigned_integer_dtypes(endianness="="),
    hnp.floating_dtypes(endianness="="), hnp.complex_number_dtypes(endianness="="),
    st.sampled_from([np.dtype(">i4"), np.dtype(">f8"), np.dtype("<u2"), np.dtype("M8[ns]"), np.dtype("m8[s]"),
                     np.dtype("U3"), np.dtype("S2"), np.dtype("f2")]),
)
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
ARRAYS = DTYPES.flatmap(lambda dt: hnp.arrays(dt, SHAPES))
OBJ_ARRAYS = st.lists(st.one_of(TEXT, st.none(), INTS, st.floats(allow_nan=False)), max_size=5).map(
    lambda xs: np.array(xs + [None], dtype=object)[:len(xs)])
NP_SCALARS = st.one_of(ARRAYS.filter(lambda a: a.size > 0).map(lambda a: a.flat[0]),
                       st.sampled_from([np.float64("nan"), np.int64(-5), np.bool_(True), np.float32(-0.0)]))
LEAVES = st.one_of(FLOATS, INTS, TEXT, st.booleans(), st.none(), st.binary(max_size=8), ARRAYS, NP_SCALARS,
                   OBJ_ARRAYS, st.fractions())


def _trials(parts):
    return Trials(*parts)


def _config(parts):
    return Config("all_fours", parts[0], 1, 52, 12, tuple(parts[1]), None, (6, 6, 6, 6), str(parts[2]))


TREES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(HASHABLE, inner, max_size=4),
        st.dictionaries(st.builds(_config, st.tuples(st.integers(2, 6), st.lists(st.integers(-2, 5), max_size=3),
                                                     TEXT)), inner, max_size=2),
        st.tuples(inner, inner, inner).map(_trials),
        st.frozensets(HASHABLE, max_size=4),
        st.sets(HASHABLE, max_size=4),
    ),
    max_leaves=25,
)


COUNTS = st.dictionaries(st.text(max_size=6), TREES, max_size=4)
BLOBS = st.dictionaries(st.text(max_size=5), st.binary(max_size=20), max_size=3)
_HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


def _random_tree_roundtrip(tmp_path, counts, blobs):
    meta = {"fingerprint": {"x": [1, 2.5, "é"]}, "n": 3}
    got, got_meta, got_blobs = roundtrip(tmp_path, counts, meta, blobs)
    same(counts, got)
    assert got_meta == meta
    assert got_blobs == blobs and all(type(v) is bytes for v in got_blobs.values())


@settings(max_examples=40, deadline=None, suppress_health_check=_HEALTH)
@given(COUNTS, BLOBS)
def test_random_trees_come_back_the_same(tmp_path, counts, blobs):
    _random_tree_roundtrip(tmp_path, counts, blobs)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=_HEALTH)
@given(COUNTS, BLOBS)
def test_many_random_trees_come_back_the_same(tmp_path, counts, blobs):
    _random_tree_roundtrip(tmp_path, counts, blobs)


def test_every_kind_in_one_tree(tmp_path):
    counts = {
        "det": {
            "ints": [0, -1, 2**63 - 1, -2**63, 2**63, -2**63 - 1, 10**40, -10**40, True, False],
            "floats": [0.0, -0.0, math.inf, -math.inf, math.nan, struct.unpack("<d", b"\x01\x00\x00\x00\x00\x00\xf8\x7f")[0],
                       5e-324, 1.7976931348623157e308],
            "text": ["", "é", "\ud800", "a\x00b"], "none": None, "bytes": b"\x00\xff",
            "frac": Fraction(-7, 3), "set": {1, "a", (2, 3)}, "frozen": frozenset({0.5}),
            (1, "x", 2.5, None, True): "tuple key", 3: "int key", 2.5: "float key", None: "none key",
            "arrays": [np.zeros((0, 3), ">i4"), np.array(7, np.uint8), np.arange(24, dtype="<f2").reshape(2, 3, 4),
                       np.asfortranarray(np.arange(6.0).reshape(2, 3)), np.arange(10)[::3],
                       np.array([1 + 2j], np.complex64), np.array(["2020-01-01", "NaT"], "M8[D]"),
                       np.array(["ab", ""], "U2"), np.array([b"x"], "S3"), np.array([True, False])],
            "objects": np.array([["a", None], [3, 2.5]], dtype=object),
            "scalars": [np.float64("nan"), np.int8(-3), np.bool_(False), np.datetime64(5, "s"), np.str_("zz")],
            "dataclasses": [Trials(np.arange(3), np.zeros(3, np.int8), np.ones(3)),
                            {Config("scotch_whist", 4, 1, 52, 51, (0, 1), 3, (13, 13), "sw4"): [1]}],
        }
    }
    got, _, _ = roundtrip(tmp_path, counts)
    same(counts, got)
    assert list(got["det"]) == list(counts["det"])  # dict order kept


def test_a_large_array_is_split_across_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(cf, "PIECE", 1000)  # pieces of 1000 bytes: the continuation rows without 16 MiB arrays
    a = np.random.default_rng(1).random(1001)
    counts = {"d": {"a": a, "s": "x" * 2500, "b": [a[:3]]}}
    got, _, blobs = roundtrip(tmp_path, counts, blobs={"big": bytes(range(256)) * 9})
    same(counts, got)
    assert blobs["big"] == bytes(range(256)) * 9
    kinds = pq.read_table(tmp_path / "c.parquet").column("kind").to_pylist()
    assert kinds.count("more") == 8 + 2 + 2


def test_the_layout_is_the_documented_one(tmp_path):
    save_counts(tmp_path / "c.parquet", {"d": {"k": [1, 2.5]}}, {"fingerprint": "f"}, {"b": b"xy"})
    f = pq.ParquetFile(tmp_path / "c.parquet")
    assert f.schema_arrow.names == ["kind", "n", "field", "name", "shape", "i64", "data"]
    md = {k.decode(): v.decode() for k, v in f.schema_arrow.metadata.items() if k.startswith(b"auditor.")}
    assert md["auditor.format"] == "auditor.counts" and md["auditor.layout"] == "1"
    assert md["auditor.version"] == __version__ and json.loads(md["auditor.meta"]) == {"fingerprint": "f"}
    t = f.read().to_pydict()
    assert t["kind"] == ["dict", "str", "dict", "str", "list", "int", "float", "blob"]
    assert t["n"] == [1, 0, 1, 0, 2, 0, 0, 0]
    assert t["i64"][5] == 1 and struct.pack("<q", t["i64"][6]) == struct.pack("<d", 2.5)
    assert t["data"][1] == b"d" and t["data"][7] == b"xy" and t["field"][7] == "b"


# ---------------------------------------------------------------- what cannot be saved


@dataclasses.dataclass
class NotOurs:
    x: int


@pytest.mark.parametrize("value, where, what", [
    ({"a": [1, object()]}, "det['a'][1]", "builtins.object"),
    ({"a": {"b": lambda: 0}}, "det['a']['b']", "function"),
    ({"t": Trials(np.arange(2), np.zeros(2), [1, {2}, {3: [b"", np.array([object()])]}])},
     "det['t'].p[2][3][1][0]", "an object array may hold str, int, float, bool or None, not builtins.object"),
    ({"o": np.array([[1, [2]]], dtype=object)}, "det['o'][1]", "an object array may hold"),
    ({"n": NotOurs(1)}, "det['n']", f"a dataclass {NotOurs.__module__}.NotOurs (only dataclasses of the auditor"),
    ({"d": collections.defaultdict(list)}, "det['d']", "collections.defaultdict"),
    ({"c": collections.Counter()}, "det['c']", "collections.Counter"),
    ({"p": collections.namedtuple("P", "x")(1)}, "det['p']", "P"),
    ({"m": np.ma.masked_array([1])}, "det['m']", "MaskedArray"),
    ({"v": np.zeros(2, "i4,f8")}, "det['v']", "dtype"),
    ({"c": 1 + 2j}, "det['c']", "builtins.complex"),
    ({"b": bytearray(b"x")}, "det['b']", "bytearray"),
])
def test_a_value_that_is_not_plain_data_is_refused_with_its_path(tmp_path, value, where, what):
    with pytest.raises(CountsFileError) as e:
        save_counts(tmp_path / "c.parquet", {"det": value}, {})
    msg = str(e.value)
    assert where in msg and what in msg and "\n" not in msg, msg
    assert not os.listdir(tmp_path)


def test_a_dataclass_defined_in_a_function_is_refused(tmp_path, monkeypatch):
    local = dataclasses.make_dataclass("Local", ["x"])
    local.__module__ = "auditor.detectors.base"  # claims to be ours, but cannot be found by its name
    with pytest.raises(CountsFileError, match="cannot be found again by its name"):
        save_counts(tmp_path / "c.parquet", {"d": local(1)}, {})


def test_counts_and_meta_and_blobs_must_have_their_shapes(tmp_path):
    with pytest.raises(CountsFileError, match="dict of detector name"):
        save_counts(tmp_path / "c.parquet", {1: {}}, {})
    with pytest.raises(CountsFileError, match="meta is not JSON"):
        save_counts(tmp_path / "c.parquet", {}, {"x": float("nan")})
    with pytest.raises(CountsFileError, match="blobs are str -> bytes"):
        save_counts(tmp_path / "c.parquet", {}, {}, {"x": "text"})
    assert not os.listdir(tmp_path)


# ---------------------------------------------------------------- what cannot be loaded


def _saved(tmp_path, meta=None):
    path = tmp_path / "c.parquet"
    save_counts(path, {"dealer_jack": {"s": Trials(np.arange(3), np.ones(3, np.int8), np.full(3, 0.25)),
                                       "k": [3, 2.5, True]}},
                meta if meta is not None else {"fingerprint": {"dealer_jack": {"fdr": 0.01, "version": 2}}})
    return path


def _rewrite(path, dest, metadata=None, column=None):
    """A copy of a counts file with some metadata replaced (the check value made to match) or a column changed."""
    t = pq.read_table(path)
    md = {k.decode(): v.decode() for k, v in t.schema.metadata.items() if k.startswith(b"auditor.")}
    md.update(metadata or {})
    md["auditor.check"] = cf._check_value(md)
    if column is not None:
        name, values = column
        t = t.set_column(t.schema.get_field_index(name), name, pa.array(values, t.schema.field(name).type))
    pq.write_table(t.replace_schema_metadata(md), dest)
    return dest


def _refused(path, match, **kw):
    with pytest.raises(CountsFileError) as e:
        load_counts(path, **kw)
    msg = str(e.value)
    assert isinstance(e.value, InputError) and "\n" not in msg and str(path) in msg, msg
    assert match in msg, msg
    return msg


def test_a_missing_file_and_a_file_that_is_not_parquet(tmp_path):
    _refused(tmp_path / "none.parquet", "no such file")
    (tmp_path / "x.parquet").write_text("hello\n")
    _refused(tmp_path / "x.parquet", "not a readable counts file")
    (tmp_path / "empty.parquet").write_bytes(b"")
    _refused(tmp_path / "empty.parquet", "not a readable counts file")
    folder = tmp_path / "folder"
    folder.mkdir()
    _saved(folder)  # a counts file inside: still not read as one
    _refused(folder, "is a folder, not a counts file")


def test_a_parquet_file_that_is_not_a_counts_file(tmp_path):
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "log.parquet")
    _refused(tmp_path / "log.parquet", "not a counts file")


def test_an_unknown_layout_version(tmp_path):
    dest = _rewrite(_saved(tmp_path), tmp_path / "v2.parquet", {"auditor.layout": "2"})
    _refused(dest, "counts layout version '2': this auditor reads layout 1 only")


def test_another_auditor_version_unless_allowed(tmp_path):
    path = _saved(tmp_path)
    dest = _rewrite(path, tmp_path / "old.parquet", {"auditor.version": "0.0.9"})
    _refused(dest, f"counts saved by auditor 0.0.9, this is auditor {__version__}")
    counts, _, _ = load_counts(dest, allow_other_version=True)
    same(counts, load_counts(path)[0])


def test_a_damaged_footer_is_seen(tmp_path):
    t = pq.read_table(_saved(tmp_path))
    md = dict(t.schema.metadata)
    md[b"auditor.meta"] = b'{"fingerprint": {"dealer_jack": {"fdr": 0.02, "version": 2}}}'
    pq.write_table(t.replace_schema_metadata(md), tmp_path / "bad.parquet")
    _refused(tmp_path / "bad.parquet", "does not match its check value")


def test_another_fingerprint_says_what_differs(tmp_path):
    path = _saved(tmp_path)
    fp = {"dealer_jack": {"fdr": 0.01, "version": 2}}
    assert load_counts(path, expect_fingerprint=fp)[1]["fingerprint"] == fp
    msg = _refused(path, "counted with other settings: dealer_jack.fdr: file 0.01, expected 0.02",
                   expect_fingerprint={"dealer_jack": {"fdr": 0.02, "version": 2}})
    assert "count again" in msg and "version" not in msg
    _refused(path, "marked_ten: expected, not in the file",
             expect_fingerprint={"dealer_jack": {"fdr": 0.01, "version": 2}, "marked_ten": {"fdr": 0.04}})
    _refused(path, "dealer_jack.version: file 2, expected 3; dealer_jack.bins: expected, not in the file",
             expect_fingerprint={"dealer_jack": {"fdr": 0.01, "version": 3, "bins": 512}})
    _refused(path, "fingerprint: file {", expect_fingerprint="abc")
    _refused(_saved(tmp_path, meta={}), "the counts file has no fingerprint", expect_fingerprint=fp)


def test_a_class_outside_the_package_is_never_imported(tmp_path):
    path = _saved(tmp_path)
    names = pq.read_table(path).column("name").to_pylist()
    i = names.index("auditor.detectors.base:Trials")
    for bad, why in [("antigravity:Trials", "outside the auditor package"),
                     ("auditorx.evil:Trials", "outside the auditor package"),
                     ("auditor.no_such_module:Trials", "not part of this auditor"),
                     ("auditor.detectors.base:np", "does not define as a dataclass"),
                     ("auditor.detectors.base:Detector", "does not define as a dataclass"),
                     ("auditor.facts:Config.__init__", "does not define as a dataclass"),
                     ("auditor.detectors.base:Trials;import os", "outside the auditor package")]:
        dest = _rewrite(path, tmp_path / "evil.parquet", column=("name", names[:i] + [bad] + names[i + 1:]))
        _refused(dest, why)
    assert "antigravity" not in sys.modules and "auditorx" not in sys.modules


def test_changed_fields_of_a_dataclass(tmp_path):
    path = _saved(tmp_path)
    fields = pq.read_table(path).column("field").to_pylist()
    i = fields.index("obs")
    dest = _rewrite(path, tmp_path / "f.parquet", column=("field", fields[:i] + ["hits"] + fields[i + 1:]))
    _refused(dest, "counts of another auditor: the fields of auditor.detectors.base.Trials differ from the file's")


def test_truncated_files_are_refused(tmp_path):
    path = _saved(tmp_path)
    data = path.read_bytes()
    for cut in sorted({1, 4, 8, len(data) // 3, len(data) // 2, len(data) - 9, len(data) - 8, len(data) - 1}):
        (tmp_path / "t.parquet").write_bytes(data[:cut])
        _refused(tmp_path / "t.parquet", "")


def _flip_bytes(tmp_path, every):
    """Bytes of a small file flipped one at a time: the load refuses with one line, or gives the same tree (a byte
    nobody reads, such as the writer's name): never a traceback, never different counts."""
    path = _saved(tmp_path)
    want = load_counts(path)
    data = bytearray(path.read_bytes())
    refused = 0
    positions = range(0, len(data), every)
    for pos in positions:
        bad = bytearray(data)
        bad[pos] ^= 0x5A
        (tmp_path / "bad.parquet").write_bytes(bytes(bad))
        try:
            got = load_counts(tmp_path / "bad.parquet")
        except CountsFileError as e:
            assert "\n" not in str(e)
            refused += 1
            continue
        same(want[0], got[0])
        assert got[1:] == want[1:]
    assert refused > len(positions) // 2


def test_corrupt_bytes_are_refused_or_harmless(tmp_path):
    _flip_bytes(tmp_path, every=11)


@pytest.mark.slow
def test_every_corrupt_byte_is_refused_or_harmless(tmp_path):
    _flip_bytes(tmp_path, every=1)


def test_crafted_rows_are_refused(tmp_path):
    path = _saved(tmp_path)
    t = pq.read_table(path).to_pydict()
    n = t["n"]
    for col, change in [("n", lambda v: [v[0] + 5] + v[1:]),        # more detectors than rows
                        ("n", lambda v: [-1] + v[1:]),
                        ("shape", lambda v: [s if s is None else [s[0] + 1] for s in v]),
                        ("i64", lambda v: [None] * len(v)),  # the int, the float, the bool without values
                        ("i64", lambda v: [x if x != 1 else 2 for x in v]),  # a bool of 2
                        ("kind", lambda v: ["more"] + v[1:]),
                        ("kind", lambda v: ["list"] + v[1:]),
                        ("name", lambda v: [x if x != "<f8" else "|O" for x in v]),
                        ("name", lambda v: [x if x != "<f8" else "V8" for x in v])]:
        dest = _rewrite(path, tmp_path / "x.parquet", column=(col, change(list(t[col]))))
        _refused(dest, "")
    assert n[0] == 1


# ---------------------------------------------------------------- atomicity


def test_a_refused_tree_leaves_an_older_file_as_it_was(tmp_path):
    path = _saved(tmp_path)
    before = path.read_bytes()
    with pytest.raises(CountsFileError):
        save_counts(path, {"d": {"x": object()}}, {})
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["c.parquet"]


class _HalfWriter(pq.ParquetWriter):
    """A writer whose disk fills up at the end: the file is cut in half and closing fails."""

    def close(self):
        super().close()
        with open(self.where, "r+b") as fh:
            fh.truncate(os.path.getsize(self.where) // 2)
        raise OSError(28, "No space left on device")


def test_a_write_that_fails_halfway_leaves_no_file(tmp_path, monkeypatch):
    # the rows stream to the file a row group at a time (issue 15); a failure at any point leaves nothing new
    monkeypatch.setattr(pq, "ParquetWriter", _HalfWriter)
    with pytest.raises(OSError):
        save_counts(tmp_path / "new.parquet", {"d": {"x": np.arange(1000)}}, {})
    assert not os.listdir(tmp_path)
    monkeypatch.undo()
    path = _saved(tmp_path)
    before = path.read_bytes()
    monkeypatch.setattr(pq, "ParquetWriter", _HalfWriter)
    with pytest.raises(OSError):
        save_counts(path, {"d": {"x": np.arange(1000)}}, {})
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["c.parquet"]


def test_a_tree_of_many_row_groups_streams_out_and_back(tmp_path, monkeypatch):
    """Saving flushes a row group at a time, loading reads one at a time; a node's data pieces that straddle a
    group boundary (`more` rows) and a dataclass's fields across groups come back equal. Small groups and
    pieces here make every kind of boundary happen."""
    import auditor.countfile as cf

    monkeypatch.setattr(cf, "ROW_GROUP", 7)
    monkeypatch.setattr(cf, "PIECE", 5)
    rng = np.random.default_rng(3)
    tree = {"t": {"a": [Trials(key=np.arange(n), obs=rng.random(n) < 0.3, p=rng.random(n)) for n in (0, 1, 9, 40)],
                  "s": ["x" * k for k in range(13)], "b": bytes(range(37)), "big": 2 ** 200 + 3,
                  "f": [1.5, -0.0, float("inf")], "fr": Fraction(7, 3), "n": None}}
    path = tmp_path / "many.parquet"
    save_counts(path, tree, {"m": 1}, {"blob": b"z" * 23})
    assert pq.ParquetFile(path).metadata.num_row_groups >= 10
    got, meta, blobs = load_counts(path)
    same(tree, got)
    assert meta == {"m": 1} and blobs == {"blob": b"z" * 23}


def _tiny_rows(monkeypatch, size):
    """Row groups of 3 rows, pieces of 5 bytes, a flush every 7 bytes (every boundary happens in a small file), and
    a blob of `size` bytes with a tree holding an array of as many elements."""
    monkeypatch.setattr(cf, "ROW_GROUP", 3)
    monkeypatch.setattr(cf, "PIECE", 5)
    monkeypatch.setattr(cf, "FLUSH_BYTES", 7)
    return bytes(range(size)), {"a": {"x": [1, 2]}, "b": np.arange(size, dtype=np.int16)}


@pytest.mark.parametrize("size", [0, 1, 4, 5, 6, 23, 25, 26])
def test_a_streamed_blob_and_a_deferred_value_write_the_file_their_joined_forms_write(tmp_path, monkeypatch, size):
    """`Deferred` (made when the writer reaches it) gives the bytes of the file of the made value; `StreamedBlob`
    (pieces of any length, cut again at every PIECE bytes) the rows of the joined blob, only flushed as they come
    rather than in one row group (issue 15: `--save-counts` folds a detector at a time and streams the games
    summary)."""
    data, tree = _tiny_rows(monkeypatch, size)
    save_counts(tmp_path / "joined", tree, {"m": 1}, {"g": data, "h": b"tail"})
    made = []
    pieces = [data[i:i + 3] for i in range(0, size, 3)] or [b""]  # 3 bytes each: cut again at every 5

    def later():
        made.append(1)
        return tree["b"]
    save_counts(tmp_path / "deferred", {"a": tree["a"], "b": cf.Deferred(later)}, {"m": 1}, {"g": data, "h": b"tail"})
    assert made == [1]
    assert (tmp_path / "deferred").read_bytes() == (tmp_path / "joined").read_bytes()
    save_counts(tmp_path / "streamed", tree, {"m": 1}, {"g": cf.StreamedBlob(size, lambda: iter(pieces)), "h": b"tail"})
    assert pq.read_table(tmp_path / "streamed").equals(pq.read_table(tmp_path / "joined"))
    got, _, blobs = load_counts(tmp_path / "streamed")
    same(tree, got)
    assert blobs == {"g": data, "h": b"tail"}


@pytest.mark.parametrize("size", [0, 9, 10, 11, 16, 26, 61])
def test_a_long_blob_is_read_into_a_file_of_the_spill_folder_a_row_at_a_time(tmp_path, monkeypatch, size):
    """With a spill folder, a blob longer than BLOB_SPILL bytes comes back as a `BlobFile` there: its
    bytes, whole or in pieces, are the blob's, read a row (and a row group) at a time, whatever the groups'
    boundaries; a shorter one, and any blob without a spill folder, comes back as bytes. The blob after it and the
    tree before it are read as before."""
    data, tree = _tiny_rows(monkeypatch, size)
    monkeypatch.setattr(cf, "BLOB_SPILL", 10)
    save_counts(tmp_path / "c", tree, {"m": 1}, {"g": data, "h": b"tail"})
    got, _, blobs = load_counts(tmp_path / "c", spill_dir=str(tmp_path / "spill"))
    same(tree, got)
    assert blobs["h"] == b"tail"
    g = blobs["g"]
    if size > 10:  # three rows of 5 bytes or more
        assert isinstance(g, cf.BlobFile) and len(g) == size
        assert os.path.dirname(os.path.dirname(g.path)) == str(tmp_path / "spill")
        assert g.read() == data and b"".join(g.pieces(4)) == data
        assert all(len(p) == 4 for p in list(g.pieces(4))[:-1])
    else:
        assert g == data and type(g) is bytes
    _, _, plain = load_counts(tmp_path / "c")
    assert plain == {"g": data, "h": b"tail"}


def test_a_streamed_blob_of_another_length_than_announced_is_refused_and_nothing_written(tmp_path):
    for size, pieces in ((5, [b"abc"]), (2, [b"abc"])):
        with pytest.raises(CountsFileError, match="blob 'g'.*not the"):
            save_counts(tmp_path / "c", {"d": 1}, None, {"g": cf.StreamedBlob(size, lambda p=pieces: iter(p))})
        assert os.listdir(tmp_path) == []


def test_the_file_maps_under_saved_arrays_are_found_and_their_pages_let_go(tmp_path, monkeypatch):
    """Saving memory-mapped arrays (marked_ten's spilled rows) reads every page of their files; the writer finds
    each array's file map (`_file_map`: a `np.memmap`, an array over it, an array over an `mmap.mmap`) and lets its
    pages go after each flush (`MADV_DONTNEED`: they stay in the file), so the rows it saves are not all resident
    at once (issue 15). Arrays in memory have no map."""
    import mmap

    np.save(tmp_path / "a.npy", np.arange(1000, dtype=np.int64))
    mapped = np.load(tmp_path / "a.npy", mmap_mode="r")
    with open(tmp_path / "a.npy", "rb") as f:
        raw = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    over = np.frombuffer(raw, np.uint8)
    assert cf._file_map(mapped) is mapped._mmap and cf._file_map(np.asarray(mapped)) is mapped._mmap
    assert cf._file_map(over) is raw and cf._file_map(over[10:20]) is raw
    assert cf._file_map(np.arange(3)) is None and cf._file_map(np.asarray(mapped).copy()) is None
    released = []
    monkeypatch.setattr(cf._Writer, "_release", lambda self: (released.append(len(self.mapped)),
                                                               self.mapped.clear()))
    monkeypatch.setattr(cf, "FLUSH_BYTES", 4000)
    tree = {"d": [np.asarray(mapped), np.arange(600), np.asarray(mapped)]}
    save_counts(tmp_path / "c", tree)
    assert sum(released) >= 2 and max(released) == 1  # the one map, after each flush that wrote some of it
    same(tree, load_counts(tmp_path / "c")[0])
    del over
    raw.close()


# ---------------------------------------------------------------- real detector counts


def _small_season(tmp_path, n_deals):
    from auditor.simulate import CheaterSpec, SeasonSpec, TableSpec, partnerships, simulate_season

    tables = [TableSpec("sw4", 4, sides=partnerships(4, "pairs"), packs=("red", "blue"), human_shuffle=True),
              TableSpec("sw5", 5),
              TableSpec("af4", 4, game="all_fours", sides=partnerships(4, "pairs"), packs=("red", "blue")),
              TableSpec("af3", 3, game="all_fours")]
    cheaters = [CheaterSpec("p00", "jack_stacker", 0.5), CheaterSpec("p01", "marked_ten", 1.0),
                CheaterSpec("p02", "colluder", 0.8, partner="p03"), CheaterSpec("p03", "colluder", 0.8, partner="p02"),
                CheaterSpec("p04", "revoker", 0.2), CheaterSpec("p05", "bad_shuffler", 0.5, mode="stack")]
    spec = SeasonSpec(tables=tables, n_deals=n_deals, players=[f"p{i:02d}" for i in range(20)], cheaters=cheaters)
    sim = simulate_season(spec, np.random.default_rng(15))
    path = tmp_path / "season.jsonl"
    sim.write(str(path))
    return path


def _check_detectors(tmp_path, log):
    from auditor.audit import detector_rng, replay_for_audit
    from auditor.detectors.registry import DETECTORS, make_detectors
    from auditor.facts import facts_from_columns

    table = replay_for_audit([str(log)]).table
    facts = facts_from_columns(table)
    dets = make_detectors()
    assert [d.name for d in dets] == list(DETECTORS)
    counts = {d.name: d.count(table, detector_rng(0, d.name), facts=facts) for d in dets}
    path = tmp_path / "counts.parquet"
    save_counts(path, counts, {"fingerprint": {"deals": len(table)}}, {"findings": b"[]"})
    loaded, meta, blobs = load_counts(path, expect_fingerprint={"deals": len(table)})
    assert list(loaded) == list(counts) and blobs == {"findings": b"[]"}
    some = 0
    for d in dets:
        same(counts[d.name], loaded[d.name], d.name)
        want = [t.to_json() for t in d.finalize(counts[d.name], detector_rng(0, d.name))]
        got = [t.to_json() for t in d.finalize(loaded[d.name], detector_rng(0, d.name))]
        assert got == want, d.name
        some += bool(want)
    assert some >= len(dets) - 1  # (dealer_cutter needs recorded cutters)


def test_every_detector_finalizes_loaded_counts_the_same(tmp_path):
    _check_detectors(tmp_path, _small_season(tmp_path, 240))


@pytest.mark.slow
def test_every_detector_on_the_demo_finalizes_loaded_counts_the_same(tmp_path):
    from pathlib import Path

    _check_detectors(tmp_path, Path(__file__).resolve().parents[1] / "fixtures" / "demo" / "season.jsonl.gz")


def test_each_detector_is_handed_over_as_it_is_read_and_its_errors_are_its_own(tmp_path):
    """`load_counts(each=...)` (issue 15, `--add-counts` a detector at a time): `each` gets every top-level entry in
    the file's order, the value equal to a plain load's, and what it returns is kept in its place; an error it
    raises comes out as it is, not as a damaged file."""
    counts = {"a": {"x": np.arange(5)}, "b": [1, 2.5, "z"], "c": {"deep": {"er": (3, 4)}}}
    path = tmp_path / "e.counts"
    save_counts(path, counts, {"k": 1}, {"blob": b"xyz"})
    plain, _, _ = load_counts(path)
    seen: list[str] = []

    def each(name, value):  # noqa: ANN001, ANN202
        seen.append(name)
        assert repr(value) == repr(plain[name])
        return f"kept {name}"

    got, meta, blobs = load_counts(path, each=each)
    assert seen == ["a", "b", "c"]
    assert got == {"a": "kept a", "b": "kept b", "c": "kept c"} and meta["k"] == 1 and blobs == {"blob": b"xyz"}

    def full(name, value):  # noqa: ANN001, ANN202
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        load_counts(path, each=full)


def test_equal_short_strings_and_flat_tuples_of_str_and_int_come_back_as_one_object(tmp_path):
    """The reader interns short strings and tuples of exact str and int (collusion's pair cells: issue 15, memory),
    and only those: a tuple holding a bool or a float equals one of ints, so it is never taken for it, and a long
    string stays its own."""
    long = "y" * (cf.INTERN_MAX + 1)
    tree = {"a": [(1, 2), (True, 2), (1.0, 2), (1, 2), ("s", 3), ("s", 3), ((1, 2), 3), ((1, 2), 3)],
            "s": ["x", "x", long, long], "k": {("p", "q"): 1, ("p", "r"): 2}, "kk": [("p", "q")]}
    got, _, _ = roundtrip(tmp_path, tree)
    same(tree, got)
    a = got["a"]
    assert [type(v) for v in a[1]] == [bool, int] and [type(v) for v in a[2]] == [float, int]
    assert a[0] is a[3] and a[4] is a[5] and a[1] is not a[0] and a[2] is not a[0]
    assert a[6] is not a[7] and a[6][0] is a[7][0] is a[0]  # nested: the inner tuples shared, the outer not
    assert got["s"][0] is got["s"][1] and got["s"][2] is not got["s"][3]
    assert next(iter(got["k"])) is got["kk"][0]
