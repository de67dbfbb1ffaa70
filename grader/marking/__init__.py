"""Hand grading: the queue of answers a grader marks (``queue``), the local marking page
(``web``, the ``MarkingPage``, and its static ``page``), and the CSV sheet for grading without a browser
(``sheet``). The marks themselves live in ``grader.store.marks``."""
