"""Stand-ins for plotting libraries in the child: ``import matplotlib.pyplot as plt`` (or
seaborn) gives a module that does nothing. Plots are not graded, and a real matplotlib would
write caches the sandbox forbids. Only the standard library is imported here.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import types


class _Nothing:
    """Whatever a plotting library would have returned: calls, attributes, items, context
    managers and two-way unpacking (``fig, ax = plt.subplots()``) all give another _Nothing."""

    def __call__(self, *args, **kwargs):
        return self

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __getitem__(self, key):
        return self

    def __iter__(self):
        return iter((self, self))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class PlotStubs(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Plots are not graded, and a real matplotlib would write caches the sandbox forbids:
    ``import matplotlib.pyplot as plt`` (or seaborn) gives a module that does nothing."""

    PACKAGES = ("matplotlib", "seaborn")

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__getattr__ = lambda name: _NOTHING
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


_NOTHING = _Nothing()

