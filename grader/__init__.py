"""The grader: runs students' notebooks in a sandbox and compares their values with the answer key."""
