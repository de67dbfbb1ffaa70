import os

from hypothesis import settings

# In CI the property tests explore the same examples every run, so a red build is always
# reproducible; on a developer's machine they keep exploring new ones.
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")
