"""The self-check a student runs on their notebook before handing it in: the form checked,
never the value."""
