"""`python -m streamwidgets ...` is the `streamwidgets` command."""

from .cli import main

raise SystemExit(main())
