"""Test support: random legal deals for every game, preset and player count, and mutators that break them.

`generate` deals from a shuffled pack with `auditor.dealing`, plays uniformly at random among the legal cards
(`auditor.legal`) and writes the table's `recorded` points, totals and winner as the reference replay counts them.
`mutate` turns clean records into the irregular ones the replay must find (revokes, swapped cards, cards out of
turn, wrong scores, bad decks, missing deals, unreadable lines...). Randomness only through the
`numpy.random.Generator` passed in.
"""
