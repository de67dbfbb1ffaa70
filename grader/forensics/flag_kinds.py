"""What answer forensics finds (``grader.forensics.flags``): the kinds of flag, the ``Flag``
every finder returns (who, with whom, on which part, the evidence, and how likely it is to be
coincidence), and the limits the finders share."""

from __future__ import annotations

from dataclasses import dataclass

OTHER_VARIANT, SHARED_WRONG, SIMILAR_CODE = "other-variant", "shared-wrong", "similar-code"
THRESHOLD = 0.1          # at most this share of the class may share the value
MAX_PARTNERS = 3


@dataclass(frozen=True)
class Flag:
    """One student's answer to one part that looks like a classmate's (``partners``): of which
    ``kind``, the ``evidence`` in words, and ``p_coincidence``."""

    student: str
    kind: str
    partners: tuple[str, ...]
    problem: str
    part: str
    evidence: str
    p_coincidence: float

    def as_json(self) -> dict:
        return {"student": self.student, "kind": self.kind, "with": list(self.partners),
                "problem": self.problem, "part": self.part, "evidence": self.evidence,
                "p_coincidence": round(self.p_coincidence, 6)}
