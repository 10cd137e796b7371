"""The judging loop: what most needs judging asked for, and the judgments merged back.

`pairs.py` finds the unjudged (query, document) pairs of each finalized window's top k and
orders them by how much a grade would narrow the window's bounds, within a budget an hour;
`judgments.py` checks each judgment read back and merges the accepted ones into the
evaluation set; `topics.py` reads the to-judge and judgments topics; `loop.py` is the stage the
service calls; `settings.py` declares the `judging:` section. docs/judging.md is the guide.
"""
