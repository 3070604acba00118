"""Continuous monitoring (issue 17): anytime-valid evidence per (test, subject), saved between looks.

`core.run_look(paths, state_dir)` is one look; `eprocess` the evidence of one stream; `trials` what a look adds to
each stream; `state` the saved state's layout; `page` the alarm pages. docs/monitor.md is the user's guide.
"""
