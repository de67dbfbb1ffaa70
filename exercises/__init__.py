"""Exercises: YAML templates → validated, seeded variants → rendered problems and notebooks.

Data flows one way: ``problem_bank/*.yaml`` is loaded and checked here (``schema``),
sampled per student (``seeds``, ``distributions``, ``variant``) with answers from the
reference implementation in ``solutions``, rendered (``render``, ``preview``, ``html``) and
built into notebooks and the signed answer key (``notebook``, ``build``) in the shared
formats of ``formats``. Import what you use from its module (``exercises.course.bank``,
``exercises.variant.draw``, …): nothing is re-exported here, so every import says where it comes
from and importing one module never loads the rest.
"""
