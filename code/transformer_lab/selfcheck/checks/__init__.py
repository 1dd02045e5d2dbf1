"""The checks: one module per graded concept, the answers they compare with, the list of checks."""
