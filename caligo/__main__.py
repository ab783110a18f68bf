import sys

from caligo.cli import main

sys.exit(main())
