"""Exercises: YAML templates → validated, seeded variants → rendered problems and notebooks.

Data flows one way, through four stages: ``problem_bank/*.yaml`` is loaded and checked
(``template``), drawn per student and validated with answers from the reference
implementation in ``solutions`` (``variant``), rendered (``render``) and built, with
assignments, rosters and pools, into notebooks and the signed answer key (``course``), in the
shared formats of ``formats``. Import what you use from its module (``exercises.course.bank``,
``exercises.variant.draw``, …): nothing is re-exported here, so every import says where it comes
from and importing one module never loads the rest.
"""
