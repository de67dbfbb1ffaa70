"""A key's entries read only as far as they are used: a pass over the class that wants the
students' names or LMS ids (intake pairs LMS downloads by them) does not decode every
variant record. Shared by both key layouts (``formats.answer_key``: one file, one student
per line; ``formats.key_shards``: shards of stored entries): each gives ``front(sid)``, the
entry's keys before ``"problems"`` (or None when they cannot be read alone), and
``entries[sid]``, the whole entry."""

from __future__ import annotations

import copy
import json
from collections.abc import ItemsView, Mapping, ValuesView


class LazyItems(ItemsView):
    def __iter__(self):
        for sid in self._mapping:
            yield sid, LazyEntry(self._mapping, sid)


class LazyValues(ValuesView):
    def __iter__(self):
        for sid in self._mapping:
            yield LazyEntry(self._mapping, sid)


class KeyEntries(Mapping):
    """What both key layouts' entry mappings share: student id → entry, over ``_spans`` (each
    student's place in the key's files); entries decoded only as far as a pass uses them."""

    _spans: dict

    def items(self):
        """(student id, entry) for every student, each entry read only as far as it is used
        (``LazyEntry``): a pass over the class that wants the students' names or LMS ids
        (intake pairs LMS downloads by them) does not decode every variant record."""
        return LazyItems(self)

    def values(self):
        return LazyValues(self)

    def __iter__(self):
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)

    def __contains__(self, sid) -> bool:
        return sid in self._spans


_PROBLEMS = '"problems":'


def front_of(raw: bytes) -> dict | None:
    """The keys before "problems" of an entry's canonical text (its keys are sorted, so every
    key before ``"problems"`` — name, e-mail, LMS ids, notebook — is ahead of the variant
    records), checked to be a whole JSON object; None when the head cannot be read alone."""
    try:
        text = raw.decode("utf-8")
        cut = text.find("," + _PROBLEMS)
        if cut < 0 and text.startswith("{" + _PROBLEMS):
            return {}
        if cut > 0:
            head = json.loads(text[:cut] + "}")     # balanced only if the cut is at the top
            if isinstance(head, dict) and all(k < "problems" for k in head):
                return head
    except (ValueError, UnicodeDecodeError):
        pass
    return None


class LazyEntry(Mapping):
    """A student's entry as a read-only mapping that decodes only what is asked of it: a key
    before ``"problems"`` from the entry's front alone, anything else from the whole entry,
    decoded once (``entries[sid]``, checked against its signed digest)."""

    __slots__ = ("_entries", "_sid", "_head", "_whole")

    def __init__(self, entries, sid: str):
        self._entries, self._sid, self._head, self._whole = entries, sid, None, None

    def _all(self) -> dict:
        if self._whole is None:
            self._whole = self._entries[self._sid]
        return self._whole

    def _front(self) -> dict | None:
        if self._head is None:
            head = self._entries.front(self._sid)       # (AnswerKeyError: changed on disk)
            self._head = False if head is None else head
        return None if self._head is False else self._head

    def __getitem__(self, name):
        if self._whole is None and isinstance(name, str) and name < "problems":
            head = self._front()
            if head is not None:
                return head[name]
        return self._all()[name]

    def __contains__(self, name) -> bool:
        try:
            self[name]
        except KeyError:
            return False
        return True

    def __iter__(self):
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    # Copied or pickled, it is the plain entry it stands for (no open file travels).
    def __copy__(self) -> dict:
        return dict(self._all())

    def __deepcopy__(self, memo) -> dict:
        return copy.deepcopy(self._all(), memo)

    def __reduce__(self):
        return dict, (self._all(),)
