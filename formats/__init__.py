"""The files both sides read: the ground floor under ``exercises`` (which writes them) and
``grader`` (which reads them).

The signed answer key and the shape of its entries (``answer_key``, ``key_shape``), how
values are serialised (``serialize``) and written as NumPy literals (``literals``), the
tolerance rule every answer is judged by (``compare``), the notebook's fixed cells and its
grade ids (``cells``), the text-file reader and atomic writer (``textfile``), and the kit's
version (``version``). Imports only the standard library and NumPy.
"""
