"""Intake: submissions in — folder and LMS layouts, receipt times, bounded reading of a
notebook, its kit cells and givens, and pairing each file with a student."""
