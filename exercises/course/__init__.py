"""A course: the bank of templates, assignments, rosters, pools, deadlines and the build that
writes every student's notebook and the signed answer key."""
