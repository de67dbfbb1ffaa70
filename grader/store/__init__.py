"""What is kept: the SQLite gradebook, the hand grades (marks), each student's grade as the
reports read it, and the TA's list of what needs a human look."""
