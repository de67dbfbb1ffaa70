"""Templates: a YAML family read with file:line errors into its model, the expression language
and the reference functions it calls, distributions, checks, rubrics, follow recipes and texts."""
