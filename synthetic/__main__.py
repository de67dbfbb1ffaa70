"""``python -m synthetic BUILD --key KEY --secret-env VAR --out OUT`` (see ``synthetic.cli``)."""

import sys

from synthetic.cli import main

sys.exit(main())
