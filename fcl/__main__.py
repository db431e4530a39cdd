import sys

from fcl.cli import main

sys.exit(main())
