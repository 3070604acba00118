"""The report's view: everything it says, built once from the audit JSON document.

`build_view(doc)` turns the document of outputs.md (`auditor audit --json`) into plain data — headings, sentences
(`sentences`), table rows, numbers already formatted, charts (`svg`) — that the HTML, Markdown and terminal
renderers only lay out. Strings that came from a log (player ids, game ids, sources, finding messages) are kept raw
here: each renderer escapes them for its own medium. Nothing here reads a clock or draws a random number, so the
same document gives the same view.
"""

from __future__ import annotations

from typing import Any

from . import svg
from .sentences import (FINDING_WORDS, HOW_TO_READ, MONTHLY_NOTE, NOT_CLEAN_NOTE, audit_sentence, entry_view,
                        family_sentence, finding_where, fmt_num, players_named, section_key, selection_sentence,
                        sensitivity_note, spec_of)
from .values import as_dict, finite
from .verdict import Coverage

ROWS_SHOWN = 15  # rows of a test's table shown before the "all subjects" fold
WATCH_SHOWN = 10  # watch-list rows shown before the fold
MAX_FINDINGS_SHOWN = 500  # findings listed in the HTML (all are in the JSON)
FINDINGS_SHOWN = 25  # of which shown before the fold


def _entries(doc: dict, key: str) -> list[dict]:
    val = doc.get(key)
    return [e for e in val if isinstance(e, dict)] if isinstance(val, list) else []


def _sort_key_p(e: dict) -> tuple:
    p = finite(e.get("pvalue"))
    return (p if p is not None else 2.0, str(e.get("test", "")), str(e.get("subject", "")))


def build_view(doc: dict, charts: bool = True) -> dict:
    """Everything the report says, as plain data (charts as SVG strings when `charts`)."""
    doc = doc if isinstance(doc, dict) else {}
    tests = _entries(doc, "tests")
    flags = _entries(doc, "flags") or [e for e in tests if e.get("flagged")]
    families = _entries(doc, "families")
    replay = as_dict(doc.get("replay"))
    findings = _entries(replay, "findings")
    deals = doc.get("deals", replay.get("deals"))
    games = doc.get("games", replay.get("games"))

    watch = sorted((e for e in tests if e.get("tier") == "watch"), key=_sort_key_p)
    by_test: dict[str, list[dict]] = {}
    for e in tests:
        by_test.setdefault(str(e.get("test", "")), []).append(e)
    fam_of = {str(f.get("test", "")): f for f in families}
    for t in by_test:  # a test without a declared family still gets a section
        if t not in fam_of:
            fam_of[t] = {"test": t, "tests": len(by_test[t])}
    fdrs = sorted({v for v in (finite(f.get("fdr")) for f in fam_of.values()) if v is not None})

    # findings by code, most frequent first
    counts: dict[str, int] = {}
    for f in findings:
        counts[str(f.get("code", "?"))] = counts.get(str(f.get("code", "?")), 0) + 1
    by_code = [{"code": c, "count": k, "words": FINDING_WORDS.get(c, c.replace("_", " "))}
               for c, k in sorted(counts.items(), key=lambda ck: (-ck[1], ck[0]))]
    finding_rows = [{"code": str(f.get("code", "")), "source": str(f.get("source") or ""),
                     "where": finding_where(f), "message": str(f.get("message") or "")}
                    for f in findings[:MAX_FINDINGS_SHOWN]]

    n_flags = len(flags)
    flagged_players = sorted(players_named(flags))
    cover = Coverage.of_doc(doc)  # issue 12: nothing to audit never reads as all clear
    if n_flags:
        headline = (f"{n_flags} flag{'s' if n_flags != 1 else ''} naming {len(flagged_players)} "
                    f"player{'s' if len(flagged_players) != 1 else ''}: " + ", ".join(flagged_players))
    elif cover.audited:
        headline = f"No one is flagged among {cover.audited:,} deal{'s' if cover.audited != 1 else ''} audited"
    else:
        headline = cover.nothing_headline()
    headline += cover.unread_clause()
    if findings:
        headline += f"; {len(findings):,} irregularit{'ies' if len(findings) != 1 else 'y'} in the logs"
    elif cover.audited:
        headline += "; the logs replay without irregularities"

    fam_views = []
    for t in sorted(fam_of, key=section_key):
        fam = fam_of[t]
        entries = sorted(by_test.get(t, []), key=lambda e: (_sort_key_p(e)))
        spec = spec_of(t)
        nf = sum(1 for e in entries if e.get("tier") == "report" or e.get("flagged"))
        nw = sum(1 for e in entries if e.get("tier") == "watch")
        fv = {
            "test": t, "title": spec.title, "what": spec.what,
            "size": int(finite(fam.get("tests")) or len(entries)),
            "fdr": finite(fam.get("fdr")), "method": str(fam.get("method", "")), "share": finite(fam.get("share")),
            "sentence": family_sentence(fam, nf, nw), "n_flagged": nf, "n_watch": nw,
            "rows": [entry_view(e) for e in entries], "charts": [],
            "sensitivity_note": sensitivity_note(t, entries),
        }
        if charts and entries:
            fv["charts"] = svg.charts_for_family(t, entries, fam)
        fam_views.append(fv)

    timelines = []
    for e in flags:
        ev = entry_view(e)
        chart = svg.timeline(e) if charts else ""
        timelines.append({"test": ev["test"], "title": ev["title"], "subject": ev["subject"],
                          "sentence": ev["sentence"], "svg": chart})

    subjects: dict[str, list[dict]] = {}
    for e in tests:
        subjects.setdefault(str(e.get("subject", "?")), []).append(entry_view(e))
    subject_views: list[dict[str, Any]] = [{"subject": s, "tests": sorted(rows, key=lambda x: x["test"])}
                                           for s, rows in sorted(subjects.items())]

    fdr_text = ", ".join(f"{f:.0%}" for f in fdrs) if fdrs else "n/a"
    level = finite(as_dict(doc.get("audit")).get("level"))
    if level is not None:
        fdr_text = f"{level:.0%}"
    return {
        "title": "Fair-play audit",
        "deals": fmt_num(deals), "games": fmt_num(games), "seed": "n/a" if doc.get("seed") is None
        else str(doc.get("seed")), "fdr": fdr_text,
        "headline": headline, "n_flags": n_flags,
        "flags": [entry_view(e) for e in flags], "watch": [entry_view(e) for e in watch],
        "n_findings": len(findings), "findings_by_code": by_code, "findings": finding_rows,
        "findings_omitted": max(0, len(findings) - MAX_FINDINGS_SHOWN),
        "families": fam_views, "timelines": timelines, "subjects": subject_views,
        "how_to_read": HOW_TO_READ, "monthly_note": MONTHLY_NOTE, "not_clean_note": NOT_CLEAN_NOTE,
        "n_tests": fmt_num(len(tests)), "n_families": len(fam_views), "rows_shown": ROWS_SHOWN,
        "watch_shown": WATCH_SHOWN,
        "findings_shown": FINDINGS_SHOWN,
        "selection": selection_sentence(doc.get("selection")),
        "audit_sentence": audit_sentence(doc),
    }
