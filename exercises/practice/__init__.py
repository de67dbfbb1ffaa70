"""Practice: fresh variants of a template from a seed space of their own, never a graded one."""
