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
# This notebook simulates a small club season with planted cheaters, audits it exactly as `auditor audit` does,
# and drills into one suspect: which deals made his score, how his excess built up, and where he sits among the
# dealers. Every table comes from the auditor's own API (issue 16), as polars DataFrames:
#
# - `auditor.run_audit(paths, **options)`: the audit, with `.tests`, `.flags`, `.findings`, `.games` and the JSON
#   `.document` (the options are the CLI's flags: `fdr`, `seed`, `table`, `game`, `since`, `until`, ...);
# - `auditor.read_deals(paths)`: one row per replayed deal (who dealt, where the Jack of trumps went, the exact
#   chance an honest deal gives the dealer that Jack, points, findings).
#
# `.to_pandas()` turns any of them into a pandas DataFrame. Run it with one command (notebooks/README.md):
# `python notebooks/run.py`, which executes it and writes `investigate_season.ipynb` with its outputs. Every random
# draw comes from the seeds below; `AUDITOR_NB_DEALS` sets the size of the season (the tests run a small one).

# %%
import os
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import polars as pl

import auditor
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
planted = pl.DataFrame([{"player": c["player"], "kind": c["kind"], "q": float(c["q"])} for c in sim.key["cheaters"]])
print(f"{len(sim.records)} deals written to {log}")
planted

# %% [markdown]
# ## 2. Audit it
# `auditor.run_audit(log, seed=0)` is `auditor audit season.jsonl --seed 0`: replay, every detector, the flags
# decided over the whole audit. `.tests` has one row per test and subject (the columns of docs/spec/outputs.md,
# "Tables for analysts"); `auditor audit season.jsonl --out tests.parquet` writes the same table.

# %%
audit = auditor.run_audit(log, seed=AUDIT_SEED)
tests = audit.tests
print(f"{audit.document['deals']} deals, {audit.findings.height} replay findings, {audit.flags.height} flags")
tests.filter(pl.col("tier") != "clear").sort("pvalue").select(
    "test", "subject", "n", "observed", "expected", "pvalue", "qvalue", "tier", "strong")

# %%
# The replay's findings, counted by code (each row also has its file, line, game, deal, trick, seat and message).
audit.findings.group_by("code").agg(pl.len().alias("findings"), pl.col("player").n_unique().alias("players")).sort(
    "findings", descending=True)

# %%
# Flags against the key: which planted cheaters were caught, and did any honest player get flagged?
cheaters = set(planted["player"])
flagged_players = audit.flags.select(pl.col("subject").str.split("+").alias("player")).explode("player")
caught = sorted(set(flagged_players["player"]) & cheaters)
honest_flagged = sorted(s for s in audit.flags["subject"] if not set(s.split("+")) & cheaters)
print("caught:", caught)
print("honest players flagged:", honest_flagged)
audit.flags.to_pandas()[["test", "subject", "pvalue", "qvalue", "sentence"]]  # the same table in pandas

# %%
html = write_report(audit.document, OUT / "report.html")
print("HTML report:", html)

# %% [markdown]
# ## 3. Pick a suspect
# The most significant `dealer_jack` result, or the planted Jack stacker when this small season flags no dealer.

# %%
dj = tests.filter(pl.col("test") == "dealer_jack").sort("pvalue")
stacker = planted.filter(pl.col("kind") == "jack_stacker")["player"]
suspect = dj["subject"][0] if dj["flagged"].any() or stacker.is_empty() else stacker[0]
entry = dj.filter(pl.col("subject") == suspect).row(0, named=True)
print(suspect, {k: entry[k] for k in ("n", "observed", "expected", "pvalue", "qvalue", "tier")})
print(entry["sentence"])
pl.DataFrame([{"control": k, **v} for k, v in
              next(e for e in audit.document["tests"] if e["test"] == "dealer_jack"
                   and e["subject"] == suspect)["controls"].items() if isinstance(v, dict)], strict=False)

# %% [markdown]
# ## 4. His deals, one row each
# `auditor.read_deals` gives every replayed deal. For the Scotch Whist deals he dealt: did he hold the Jack of
# trumps (`jack_where`), and what was the exact chance of that under the deal's rules (`dealer_jack_null`: player
# count, pack, who gets the turn-up)? The sum of the chances is the test's `expected`, the count its `observed`.

# %%
deals = auditor.read_deals(log)
his = (deals.filter((pl.col("dealer_player") == suspect) & (pl.col("game") == "scotch_whist")
                    & pl.col("jack_where").is_not_null())
       .sort("order")  # the canonical order every detector follows: table, time, game, deal number
       .with_columns((pl.col("jack_where") == "dealer").cast(pl.Int64).alias("held_jack"))
       .with_columns((pl.col("held_jack") - pl.col("dealer_jack_null")).alias("excess"))
       .with_columns(pl.col("excess").cum_sum().alias("cumulative_excess")))
print(his.select(pl.len(), pl.col("held_jack").sum(), pl.col("dealer_jack_null").sum()))
assert his.height == entry["n"] and his["held_jack"].sum() == entry["observed"]
assert abs(his["dealer_jack_null"].sum() - entry["expected"]) < 1e-4 * max(1.0, entry["expected"])
his.group_by("n_players").agg(pl.len().alias("deals"), pl.col("held_jack").mean().alias("rate"),
                              pl.col("dealer_jack_null").first().alias("honest_rate")).sort("n_players")

# %%
# Where the Jack of trumps went on every deal he dealt, next to every other dealer of the same tables
(deals.filter(pl.col("table").is_in(his["table"].unique().implode()) & pl.col("jack_where").is_not_null())
 .with_columns(pl.when(pl.col("dealer_player") == suspect).then(pl.lit(suspect)).otherwise(pl.lit("others"))
               .alias("dealt_by"))
 .group_by("dealt_by").agg(pl.len().alias("deals"), *[(pl.col("jack_where") == w).mean().alias(w) for w in
                                                     ("dealer", "partner", "opponent", "not_dealt")])
 .sort("dealt_by"))

# %% [markdown]
# ## 5. How the excess built up, and where he sits among the dealers

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4))
k = np.arange(1, his.height + 1)
p = his["dealer_jack_null"].to_numpy()
var = np.cumsum(p * (1 - p))
ax1.fill_between(k, -2 * np.sqrt(var), 2 * np.sqrt(var), color="#dbe7f5", label="honest ±2 sd")
ax1.plot(k, his["cumulative_excess"].to_numpy(), color="#c62828", label=f"{suspect}: observed − expected")
ax1.axhline(0, color="#2e7d32")
ax1.set_xlabel("deals he dealt, in order")
ax1.set_ylabel("Jacks of trumps above honest chance")
ax1.legend()
all_dj = tests.filter(pl.col("test") == "dealer_jack")
ax2.scatter(all_dj["n"].to_numpy(), (all_dj["observed"] / all_dj["expected"]).to_numpy(),
            c=np.where(all_dj["subject"].to_numpy() == suspect, "#c62828", "#1565c0"))
ax2.axhline(1, color="#2e7d32")
ax2.set_xlabel("deals dealt")
ax2.set_ylabel("Jack rate / honest rate")
ax2.set_title("dealers (the suspect in red)")
fig.tight_layout()
fig.savefig(OUT / "suspect.png", dpi=80)

# %% [markdown]
# ## 6. The deals behind his score
# The deals he dealt himself the Jack of trumps, the least likely first (each adds 1 − chance to his excess). For
# everything the audit says about him, with the deals behind each score: `auditor investigate season.jsonl
# --player NAME --out NAME.html`.

# %%
(his.filter(pl.col("held_jack") == 1).sort("dealer_jack_null")
 .select("source", "table", "game_id", "deal_no", "time", "n_players", "turn_up", "dealer_jack_null", "findings")
 .head(10))
