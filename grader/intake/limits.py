"""How much of a notebook intake reads: the caps on its bytes, JSON values and cells.

Kept apart from the reader, which enforces them, so that the issue codes
(``grader.intake.issues``) can state them without importing it."""

MAX_BYTES = 64 * 1024 * 1024      # far above any real notebook; a larger file is not read into memory
MAX_VALUES = 2_000_000            # JSON values in one notebook (a real one has a few thousand)
MAX_CELLS = 5_000                 # cells in one notebook (a real one has a few hundred at most)
