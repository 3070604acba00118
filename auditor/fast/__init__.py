"""The fast path: deals as columns of small ints (numpy), for the batch replay engine and the Parquet layout.

`cols`: a `Chunk` of deals in columns (cards as uint8, card lists as ragged byte arrays) built from JSON objects,
`Deal`s or Parquet; `kernel`: the replay of many deals at once, trick by trick; `chain`: the game chain over
arrays; `pipeline`: the whole `auditor replay` from paths to the JSON document without per-deal objects.
"""
