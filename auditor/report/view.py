"""The report's view: everything it says, built once from the audit JSON document.

`build_view(doc)` turns the document of outputs.md (`auditor audit --json`) into plain data — headings, sentences
(`sentences`), table rows, numbers already formatted, charts (`svg`) — that the HTML, Markdown and terminal
renderers only lay out. Strings that came from a log (player ids, game ids, sources, finding messages) are kept raw
here: each renderer escapes them for its own medium. Nothing here reads a clock or draws a random number, so the
same document gives the same view.
"""

from __future__ import annotations

from typing import Any, Callable

from . import svg
from .people import enough_data, game_scope, person_views
from .sentences import (FINDING_WORDS, GLOSSARY, HOW_TO_READ, MIN_DETECTABLE_KEYS, MONTHLY_NOTE, NOT_CLEAN_NOTE,
                        audit_sentence, entry_view, family_sentence, finding_where, fmt_num, players_named,
                        section_key, selection_sentence, sensitivity_note, spec_of)
from ..replay.result import DocEntries
from .values import as_dict, as_list, finite
from .verdict import Coverage, findings_digest

ROWS_SHOWN = 10  # rows of a test's table in the report (flags and watch-list rows always); the rest: the JSON
WATCH_SHOWN = 10  # watch-list rows shown before the fold
MAX_FINDINGS_SHOWN = 50  # findings listed in the HTML (all are in the JSON)
FINDINGS_SHOWN = 10  # of which shown before the fold
# issue 16: the charts of one report together stay within this many characters (the demo's page under 500 kB):
# the flags' timelines first, then each test's charts, tests with flags first; a test's charts over
# FAMILY_CHARTS_MAX are never drawn (thousands of dots say little on a page). What is left out is said.
CHART_BUDGET = 330_000
FAMILY_CHARTS_MAX = 120_000
WATCH_MIN_UNITS = 20  # issue 16: a watch-list entry needs this much play when its test gives no detectable size


def _entries(doc: dict, key: str) -> list[dict]:
    val = doc.get(key)
    if isinstance(val, DocEntries):  # a large input's findings: dicts made as they are read, never all held
        return val  # type: ignore[return-value]
    return [e for e in val if isinstance(e, dict)] if isinstance(val, list) else []


def _slim(e: dict) -> dict:
    """A test's entry with only what the view reads of every test: its own fields and, of its `detail`, the
    smallest detectable cheat (`MIN_DETECTABLE_KEYS`); no controls. The rows shown and the charts drawn read
    the whole entry (`_tests_read`'s `full`)."""
    e = {k: v for k, v in e.items() if k != "controls"}
    d = e.get("detail")
    if isinstance(d, dict):
        e["detail"] = {k: d[k] for k in MIN_DETECTABLE_KEYS if k in d}
    return e


def _tests_read(tests: Any) -> tuple[list[dict], Callable[[dict], dict]]:
    """(the entries the view sorts and counts, `full`: an entry as the document has it). A streamed list
    (`DocEntries`: a large audit's tests, each decoded as it is read) is read once into slim entries
    (`_slim`), and `full` decodes again the few that the report shows whole (issue 15: holding every test
    decoded took the 10M-deal audit's process from 0.4 to 1.7 GB while its report was made)."""
    if not isinstance(tests, DocEntries):
        return tests, lambda e: e
    slim: list[dict] = []
    where: dict[int, int] = {}
    for i, e in enumerate(tests):
        s = _slim(e)
        where[id(s)] = i
        slim.append(s)

    def full(e: dict) -> dict:
        i = where.get(id(e))
        return e if i is None else tests[i]

    return slim, full


def _sort_key_p(e: dict) -> tuple:
    p = finite(e.get("pvalue"))
    return (p if p is not None else 2.0, str(e.get("test", "")), str(e.get("subject", "")))


def _fit_charts(timelines: list[dict], fam_views: list[dict]) -> None:
    """Keep the charts within CHART_BUDGET (see there), in place; a test whose charts are left out says why."""
    budget = CHART_BUDGET
    for t in timelines:
        if len(t["svg"]) > budget:
            t["svg"] = ""
            t["left_out"] = True
        budget -= len(t["svg"])
    order = sorted(range(len(fam_views)), key=lambda i: (-fam_views[i]["n_flagged"], -fam_views[i]["n_watch_shown"],
                                                          i))
    for i in order:
        fv = fam_views[i]
        size = FAMILY_CHARTS_MAX + 1 if fv.pop("charts_over", False) else sum(len(c["svg"]) for c in fv["charts"])
        if not size:
            continue
        if size > FAMILY_CHARTS_MAX:
            fv["charts_note"] = (f"Its charts would draw every one of its {fv['n_subjects']:,} "
                                 f"{fv['subject_kind']} as a dot, too many to read on a page; they are left out "
                                 "here (the table below and the timelines above show the ones that matter).")
            fv["charts"] = []
        elif size > budget:
            fv["charts_note"] = "Its charts are left out to keep this report small (under 500 kB)."
            fv["charts"] = []
        else:
            budget -= size


def build_view(doc: dict, charts: bool = True) -> dict:
    """Everything the report says, as plain data (charts as SVG strings when `charts`)."""
    doc = doc if isinstance(doc, dict) else {}
    tests, full = _tests_read(_entries(doc, "tests"))
    flags = _entries(doc, "flags") or [full(e) for e in tests if e.get("flagged")]
    families = _entries(doc, "families")
    replay = as_dict(doc.get("replay"))
    findings = _entries(replay, "findings")
    deals = doc.get("deals", replay.get("deals"))
    games = doc.get("games", replay.get("games"))

    watch_all = sorted((e for e in tests if e.get("tier") == "watch"), key=_sort_key_p)
    watch = [e for e in watch_all if enough_data(e, WATCH_MIN_UNITS)]  # issue 16: only what can mean something
    shown_watch = {(str(e.get("test")), str(e.get("subject"))) for e in watch}
    by_test: dict[str, list[dict]] = {}
    for e in tests:
        by_test.setdefault(str(e.get("test", "")), []).append(e)
    fam_of = {str(f.get("test", "")): f for f in families}
    for t in by_test:  # a test without a declared family still gets a section
        if t not in fam_of:
            fam_of[t] = {"test": t, "tests": len(by_test[t])}
    fdrs = sorted({v for v in (finite(f.get("fdr")) for f in fam_of.values()) if v is not None})

    # findings by code, most frequent first (one pass over them for every report: `findings_digest`)
    digest = findings_digest(findings)
    counts = dict(digest.by_code)
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
        nw_shown = sum(1 for e in entries if (t, str(e.get("subject"))) in shown_watch)
        # issue 16: the report lists the flags, the watch list and the most unusual others; the JSON has them all
        keep = max(ROWS_SHOWN, sum(1 for e in entries if e.get("tier") in ("report", "watch") or e.get("flagged")))
        scope = game_scope(t)
        fv = {
            "test": t, "title": spec.title, "what": spec.what,
            "size": int(finite(fam.get("tests")) or len(entries)),
            "fdr": finite(fam.get("fdr")), "method": str(fam.get("method", "")), "share": finite(fam.get("share")),
            "sentence": family_sentence(fam, nf, nw), "n_flagged": nf, "n_watch": nw, "n_watch_shown": nw_shown,
            "rows": [entry_view(full(e)) for e in entries[:keep]], "rows_more": max(0, len(entries) - keep),
            "n_subjects": len(entries), "charts": [],
            "sensitivity_note": sensitivity_note(t, entries),
            "scope": f"{scope} deals only" if scope else "every game",
            "n_header": f"{scope} {spec.unit_short}" if scope else spec.unit_short,
            "subject_kind": {"dealer": "dealers", "player": "players", "pair": "pairs"}.get(spec.subject,
                                                                                            "subjects"),
            "quiet": not nf and not nw_shown,  # nothing to show: one line in the report
            "charts_note": "",
        }
        if charts and entries and not fv["quiet"]:
            if svg.charts_surely_over(entries, FAMILY_CHARTS_MAX):  # left out by `_fit_charts`: not drawn
                fv["charts_over"] = True
            else:
                fv["charts"] = svg.charts_for_family(t, [full(e) for e in entries], fam)
        fam_views.append(fv)

    timelines = []
    for e in flags:
        ev = entry_view(e)
        chart = svg.timeline(e) if charts else ""
        timelines.append({"test": ev["test"], "title": ev["title"], "subject": ev["subject"],
                          "sentence": ev["sentence"], "svg": chart})
    flag_views = []
    for e in flags:
        ev = entry_view(e)
        scope = game_scope(e.get("test"))
        ev["scope"] = f"{scope} deals only" if scope else ""
        flag_views.append(ev)

    _fit_charts(timelines, fam_views)

    fdr_text = ", ".join(f"{f:.0%}" for f in fdrs) if fdrs else "n/a"
    level = finite(as_dict(doc.get("audit")).get("level"))
    if level is not None:
        fdr_text = f"{level:.0%}"
    return {
        "title": "Fair-play audit",
        "deals": fmt_num(deals), "games": fmt_num(games), "seed": "n/a" if doc.get("seed") is None
        else str(doc.get("seed")), "fdr": fdr_text,
        "headline": headline, "n_flags": n_flags,
        "flags": flag_views, "watch": [entry_view(full(e)) for e in watch],
        "watch_hidden": len(watch_all) - len(watch), "watch_min_units": WATCH_MIN_UNITS,
        "people": person_views(flags, as_dict(doc.get("audit"))),
        "quiet_families": [f for f in fam_views if f["quiet"]],
        "busy_families": [f for f in fam_views if not f["quiet"]],
        "glossary": GLOSSARY, "reproducibility": reproducibility_view(doc),
        "n_findings": len(findings), "findings_by_code": by_code, "findings": finding_rows,
        "findings_omitted": max(0, len(findings) - MAX_FINDINGS_SHOWN),
        "families": fam_views, "timelines": timelines,
        "how_to_read": HOW_TO_READ, "monthly_note": MONTHLY_NOTE, "not_clean_note": NOT_CLEAN_NOTE,
        "n_tests": fmt_num(len(tests)), "n_families": len(fam_views), "rows_shown": ROWS_SHOWN,
        "watch_shown": WATCH_SHOWN,
        "findings_shown": FINDINGS_SHOWN,
        "selection": selection_sentence(doc.get("selection")),
        "audit_sentence": audit_sentence(doc),
    }


def _size(n: Any) -> str:
    v = finite(n)
    if v is None:
        return "n/a"
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if v >= k:
            return f"{v / k:.1f} {unit}"
    return f"{int(v):,} bytes"


def reproducibility_view(doc: dict) -> dict[str, Any]:
    """The reproducibility block (issue 16) as rows: the tool and version, the command, seed and level, each input
    with its size and SHA-256, the rules presets seen. A document without the block (made through the library,
    not `auditor audit`) says so, with its seed."""
    block = as_dict(doc.get("reproducibility"))
    seed = "n/a" if doc.get("seed") is None else str(doc.get("seed"))
    if not block:
        return {"present": False, "seed": seed, "version": "", "command": "", "level": "", "inputs": [],
                "presets": []}
    level = finite(block.get("fdr"))
    inputs = [{"path": str(i.get("path", "")), "size": _size(i.get("bytes")),
               "sha256": str(i.get("sha256") or f"not readable: {i.get('error', 'unknown')}")}
              for i in as_list(block.get("inputs")) if isinstance(i, dict)]
    presets = [f"{str(k).replace('scotch_whist', 'Scotch Whist').replace('all_fours', 'All Fours')}: "
               f"{fmt_num(v)} deals" for k, v in sorted(as_dict(block.get("rules_presets")).items())]
    return {"present": True, "seed": str(block.get("seed", seed)),
            "version": f"{block.get('tool', 'auditor')} {block.get('version', '')}".strip(),
            "command": str(block.get("command", "")), "level": f"{level:.0%}" if level is not None else "n/a",
            "inputs": inputs, "presets": presets}
