"""A grading run: each submission judged in the sandbox (the program, the pytest plugin, the
judges, look-ahead and scratch space), on one machine or a Dask cluster."""
