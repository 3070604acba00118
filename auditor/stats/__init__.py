"""Statistics: exact tests, multiple-testing families."""
