"""``python -m transformer_lab.cloudwave``: regenerate the CloudWave data (see ``build``)."""

from transformer_lab.cloudwave.build import main

raise SystemExit(main())
