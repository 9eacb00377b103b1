"""Settings read at compile time.

``COMPONENTS_IMAGE`` is the one setting that names the image every trainpool
component runs in (trainpool and kfp installed; built from the root
``Dockerfile``). Set ``TRAINPOOL_COMPONENTS_IMAGE`` before ``trainpool compile``
to point compiled YAML at your own registry.
"""

from __future__ import annotations

import os

from trainpool import __version__

COMPONENTS_IMAGE = os.environ.get(
    "TRAINPOOL_COMPONENTS_IMAGE", f"us-docker.pkg.dev/trainpool/images/components:{__version__}"
)
