# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Investigating a club season
#
# This notebook simulates a small club season with planted cheaters, audits it the way `auditor audit` does, and
# then drills into one suspect with polars, pandas and matplotlib: which deals made his score, how his excess built
# up, and whether his controls look like a cheat's or like an honest player's luck.
#
# It is kept as a jupytext "percent" script (`notebooks/investigate_season.py`) so that it diffs like code; open
# it in Jupyter with jupytext, or run `jupytext --to ipynb notebooks/investigate_season.py`. The test suite
# executes it on a small season (`AUDITOR_NB_DEALS`). Every random draw comes from the seeds below.

# %%
import os
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import polars as pl

from auditor.audit import audit_records
from auditor.cards import RJ
from auditor.dealog import read_records
from auditor.facts import config, held_prob
from auditor.investigate import build_investigation
from auditor.report.html import write_report
from auditor.simulate import club_season_spec, simulate_season

N_DEALS = int(os.environ.get("AUDITOR_NB_DEALS", "6000"))
SIM_SEED = int(os.environ.get("AUDITOR_NB_SEED", "7"))
AUDIT_SEED = 0
OUT = Path(os.environ.get("AUDITOR_NB_OUT", tempfile.mkdtemp(prefix="auditor-nb-")))
OUT.mkdir(parents=True, exist_ok=True)

# %% [markdown]
# ## 1. Simulate a season
# The demo club: Scotch Whist at tables of 4, 5 and 6, All Fours pairs and threes, about 60 players, and one
# planted cheater of each kind. The cheaters are written to a separate key file, never into the logs.

# %%
sim = simulate_season(club_season_spec(n_deals=N_DEALS), seed=SIM_SEED)
log = OUT / "season.jsonl"
sim.write(str(log), key_path=str(OUT / "season.key.json"))
planted = pd.DataFrame([{"player": c["player"], "kind": c["kind"], "q": c["q"]} for c in sim.key["cheaters"]])
print(f"{len(sim.records)} deals written to {log}")
planted

# %% [markdown]
# ## 2. Audit it
# The same call as `auditor audit season.jsonl --seed 0`: replay, every detector, one Benjamini-Hochberg family per
# test name. The document is the JSON of outputs.md.

# %%
report = audit_records(read_records([str(log)]), fdr=0.05, seed=AUDIT_SEED)
doc = report.to_json()
tests = pd.DataFrame([{k: e[k] for k in ("test", "subject", "n", "observed", "expected", "pvalue", "qvalue",
                                          "tier")} for e in doc["tests"]])
print(f"{doc['deals']} deals, {len(doc['replay']['findings'])} replay findings, {len(doc['flags'])} flags")
tests[tests.tier != "clear"].sort_values("pvalue")

# %%
# Flags against the key: which planted cheaters were caught, and did any honest player get flagged?
flags = tests[tests.tier == "report"]
cheaters = set(planted.player)
caught = sorted(set(flags.subject.str.split("+").explode()) & cheaters)
honest_flagged = sorted(s for s in flags.subject if not set(s.split("+")) & cheaters)
print("caught:", caught)
print("honest players flagged:", honest_flagged)

# %%
html = write_report(doc, OUT / "report.html")
print("HTML report:", html)

# %% [markdown]
# ## 3. Pick a suspect
# The most significant `dealer_jack` result, or the planted Jack stacker when this small season flags no dealer.

# %%
dj = tests[tests.test == "dealer_jack"].sort_values("pvalue")
stacker = planted.loc[planted.kind == "jack_stacker", "player"]
suspect = dj.subject.iloc[0] if (dj.tier == "report").any() or stacker.empty else stacker.iloc[0]
entry = next(e for e in doc["tests"] if e["test"] == "dealer_jack" and e["subject"] == suspect)
print(suspect, {k: entry[k] for k in ("n", "observed", "expected", "pvalue", "qvalue", "tier")})
pd.DataFrame(entry["controls"]).T

# %% [markdown]
# ## 4. His deals, one row each (polars)
# For every Scotch Whist deal he dealt: did he hold the Jack of trumps, and what was the exact chance of that under
# the deal's rules (player count, pack, who gets the turn-up)? The sum of the chances is the test's `expected`.

# %%
rows = []
for r in report.replay.results:
    d = r.deal
    if d.game != "scotch_whist" or r.hands is None or r.trump is None or d.players[d.dealer] != suspect:
        continue
    jack = r.trump * 13 + RJ
    rows.append({"source": d.source, "game_id": d.game_id, "deal_no": d.deal_no, "table": d.table, "n": d.n,
                 "held_jack": int((r.hands[d.dealer] >> jack) & 1),
                 "p_null": float(held_prob(config(d.ruleset, d.n), 0, RJ))})
deals = pl.DataFrame(rows).with_columns(
    (pl.col("held_jack") - pl.col("p_null")).alias("excess"),
).with_columns(pl.col("excess").cum_sum().alias("cumulative_excess"))
print(deals.select(pl.len(), pl.col("held_jack").sum(), pl.col("p_null").sum()))
assert deals["held_jack"].sum() == entry["observed"]
assert abs(deals["p_null"].sum() - entry["expected"]) < 1e-3 * max(1.0, entry["expected"])
deals.group_by("n").agg(pl.len().alias("deals"), pl.col("held_jack").mean().alias("rate"),
                        pl.col("p_null").first().alias("honest_rate")).sort("n")

# %% [markdown]
# ## 5. How the excess built up, and where he sits among the dealers

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4))
k = np.arange(1, deals.height + 1)
var = np.cumsum(deals["p_null"].to_numpy() * (1 - deals["p_null"].to_numpy()))
ax1.fill_between(k, -2 * np.sqrt(var), 2 * np.sqrt(var), color="#dbe7f5", label="honest ±2 sd")
ax1.plot(k, deals["cumulative_excess"].to_numpy(), color="#c62828", label=f"{suspect}: observed − expected")
ax1.axhline(0, color="#2e7d32")
ax1.set_xlabel("deals he dealt, in order")
ax1.set_ylabel("Jacks of trumps above honest chance")
ax1.legend()
all_dj = tests[tests.test == "dealer_jack"]
ax2.scatter(all_dj.n, all_dj.observed / all_dj.expected, c=np.where(all_dj.subject == suspect, "#c62828",
                                                                   "#1565c0"))
ax2.axhline(1, color="#2e7d32")
ax2.set_xlabel("deals dealt")
ax2.set_ylabel("Jack rate / honest rate")
ax2.set_title("dealers (the suspect in red)")
fig.tight_layout()
fig.savefig(OUT / "suspect.png", dpi=80)

# %% [markdown]
# ## 6. The deals that weigh most, as `auditor investigate` shows them

# %%
view = build_investigation(doc, suspect, report.replay.results, charts=False)
for t in view["tests"]:
    print(f"{t['test']:>16}  {t['tier']:>6}  {t['sentence']}")
top = next(t for t in view["tests"] if t["test"] == "dealer_jack")
pd.DataFrame(top["deals"])
