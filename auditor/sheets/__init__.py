"""(issue 16) Score sheets: what a club table writes down, one row per deal, as deal-log/1 records.

- `read`: a sheet (CSV, or .xlsx through polars' reader) -> deal-log/1 records of the score-sheet kind (no hands,
  no tricks: `observed`), every bad cell named by its row and column;
- `template`: the blank sheet to print (HTML, A4 or Letter) or to type into (CSV);
- `project`: full deal-log/1 records -> the rows a table would have written (simulated sheet seasons, tests).

The modules sit in different layers (`.importlinter`): this package imports none of them.
"""
