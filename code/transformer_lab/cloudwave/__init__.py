"""Synthetic CloudWave data: feedback comments, the Customer 360 table, usage grids and events.

CloudWave is the course's fictional SaaS company. Everything here is invented by seeded
generators, so the files in ``data/`` can be rebuilt byte for byte:

    python -m transformer_lab.cloudwave            # writes into the repository's data/ folder
    python -m transformer_lab.cloudwave --out DIR  # writes somewhere else

The modules, by what a course editor changes:

- ``schema`` — file names, columns, categories, plan tiers, event types: what the loaders
  (``transformer_lab.datasets``) and the models (``transformer_lab.bakeoff``) rely on;
- ``templates`` — the words of the feedback comments (praise, complaints, negations, the
  order-sensitive pairs, openers and closers): edit these to change what the comments say;
- ``customer360``, ``feedback``, ``usage``, ``events`` — one seeded generator per data set, with
  its size, seed and the rules behind it (``customer360.churn_logit`` is the hidden churn rule);
- ``draws`` — the random draws and the working-day profile the generators share;
- ``build`` — writes the four files (``python -m transformer_lab.cloudwave`` runs its ``main``).

Byte-identical output does not depend on library versions: randomness comes only from Python's
``random.Random`` (its ``random``/``choice``/``choices``/``randint`` streams are stable across
Python 3 releases), every number is formatted explicitly, keys are written in a fixed order and
lines end with ``\\n``. NumPy and pandas are not used to *write* anything. Each data set draws
from its own seeded generator, so changing one never shifts the random numbers of another.
"""
