import sys

from .devtools.cli import main

sys.exit(main())
