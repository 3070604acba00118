"""Issue 16: the reproducibility block of `auditor audit` and the salted commitment to the flag list (`--commit`,
`auditor verify-commit`), against an independent computation of the documented construction."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.errors import UsageError
from auditor.report.commitment import commitment, flags_json, read_sealed, seal, sealed_text, verify

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "fixtures" / "examples.jsonl"
FLAGS = [{"test": "dealer_jack", "subject": "kate"}, {"test": "collusion", "subject": "rosa+gus"},
         {"test": "collusion", "subject": "gus+rosa"}]


def _by_hand(salt: bytes, pairs: list[list[str]]) -> str:
    """outputs.md "commitment": SHA-256 of the 32 salt bytes then the sorted pairs as compact ASCII JSON."""
    text = "[" + ",".join('["%s","%s"]' % (t, s) for t, s in sorted(pairs)) + "]"
    return hashlib.sha256(salt + text.encode("ascii")).hexdigest()


def test_the_commitment_is_the_documented_construction():
    salt = bytes(range(32))
    pairs = [[f["test"], f["subject"]] for f in FLAGS]
    assert flags_json(FLAGS) == '[["collusion","gus+rosa"],["collusion","rosa+gus"],["dealer_jack","kate"]]'
    assert commitment(salt, FLAGS) == _by_hand(salt, pairs) == commitment(salt, FLAGS[::-1])  # order: none
    sealed = seal(FLAGS, salt=salt)
    assert sealed["salt"] == salt.hex() and sealed["commitment"] == _by_hand(salt, pairs)
    assert sealed["flags_json"] == flags_json(FLAGS)
    # a name outside ASCII is escaped, so the bytes never depend on an encoding
    assert flags_json([{"test": "t", "subject": "zoë"}]) == '[["t","zo\\u00eb"]]'


def test_a_fresh_salt_each_time_and_no_guessable_hash():
    a, b = seal(FLAGS), seal(FLAGS)
    assert a["salt"] != b["salt"] and a["commitment"] != b["commitment"] and len(a["salt"]) == 64
    # without the salt, hashing the flag list itself does not give the commitment
    assert hashlib.sha256(flags_json(FLAGS).encode()).hexdigest() not in (a["commitment"], b["commitment"])


def test_verify_finds_every_change():
    sealed = read_sealed(sealed_text(seal(FLAGS)), "sealed.json")
    c = sealed["commitment"]
    assert verify(sealed, c) == [] and verify(sealed) == []
    assert verify(sealed, c, {"flags": FLAGS[::-1]}) == []
    other = "0" * 64
    assert any("not the commitment" in p for p in verify(sealed, other))
    dropped = verify(sealed, c, {"flags": FLAGS[:2]})
    assert dropped and "sealed, not in the document: collusion/gus+rosa" in dropped[0]
    added = verify(sealed, c, {"flags": FLAGS + [{"test": "marked_ten", "subject": "walt"}]})
    assert added and "not sealed: marked_ten/walt" in added[0]
    tampered = dict(sealed, flags=sealed["flags"][:2])  # a flag removed from the sealed record itself
    assert verify(tampered, c)


@pytest.mark.parametrize("text,words", [("{", "not valid JSON"), ('{"format": "x"}', "auditor-commitment/1"),
                                        ('{"format": "auditor-commitment/1", "salt": "zz", "flags": []}', "salt"),
                                        ('{"format": "auditor-commitment/1", "salt": "' + "a" * 64 +
                                         '", "flags": [["only-one"]]}', "pair")])
def test_a_bad_sealed_file_is_a_usage_error(text, words):
    with pytest.raises(UsageError, match=words):
        read_sealed(text, "sealed.json")


def _auditor(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "auditor", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=dict(os.environ, COLUMNS="200"))


def test_audit_commit_and_verify_commit_from_the_command_line(tmp_path):
    sealed_path, doc_path = tmp_path / "sealed.json", tmp_path / "doc.json"
    p = _auditor("audit", EXAMPLES.relative_to(ROOT), "--seed", "3", "--out", doc_path, "--commit", sealed_path)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    doc = json.loads(doc_path.read_text(encoding="utf-8"))
    sealed = json.loads(sealed_path.read_text(encoding="utf-8"))
    line = [x for x in p.stderr.splitlines() if "commitment" in x]
    assert line and sealed["commitment"] in line[0] and sealed["salt"] not in p.stderr + p.stdout  # salt: file only
    pairs = [[f["test"], f["subject"]] for f in doc["flags"]]
    assert sealed["commitment"] == _by_hand(bytes.fromhex(sealed["salt"]), pairs)
    # the reproducibility block: version, the command as given, the seed, each input's SHA-256, the presets
    repro = doc["reproducibility"]
    assert repro["command"] == "auditor audit fixtures/examples.jsonl --fdr 0.05 --seed 3" and repro["seed"] == 3
    assert repro["inputs"] == [{"path": "fixtures/examples.jsonl", "bytes": EXAMPLES.stat().st_size,
                                "sha256": hashlib.sha256(EXAMPLES.read_bytes()).hexdigest()}]
    assert repro["rules_presets"] and sum(repro["rules_presets"].values()) == doc["deals"]
    assert all("/" in k for k in repro["rules_presets"])
    ok = _auditor("verify-commit", sealed_path, "--commitment", sealed["commitment"], "--report", doc_path)
    assert ok.returncode == 0 and "matches" in ok.stdout, ok.stderr
    bad = _auditor("verify-commit", sealed_path, "--commitment", "f" * 64)
    assert bad.returncode == 1 and "not the commitment" in bad.stderr
    doc["flags"].append({"test": "dealer_jack", "subject": "someone"})
    doc_path.write_text(json.dumps(doc), encoding="utf-8")
    changed = _auditor("verify-commit", sealed_path, "--report", doc_path)
    assert changed.returncode == 1 and "not sealed: dealer_jack/someone" in changed.stderr
    assert _auditor("verify-commit", doc_path).returncode == 2  # not a sealed record
    assert _auditor("verify-commit", tmp_path / "missing.json").returncode == 2
    assert _auditor("verify-commit", sealed_path, "--commitment", "xyz").returncode == 2
