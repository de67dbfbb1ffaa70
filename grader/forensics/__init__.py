"""Forensics: answers and code that look copied from another student's, across a class."""
