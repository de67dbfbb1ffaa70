"""What students and graders read: notebooks, printable pages, HTML and previews, the answer
checks a notebook carries, the due-date text."""
