from netui.cli import main

raise SystemExit(main())
