"""`python -m streamwidgets ...` is the `streamwidgets` command."""

from .apps._cli import main

raise SystemExit(main())
