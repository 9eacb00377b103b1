"""Stand-ins for the images the emulator cannot pull: Vertex's prebuilt training images as
virtualenvs for replicas that run as processes (``virtualenvs``) and as container bases
(``prebuilt_bases``), Docker Hub's ``python`` images made offline from Debian's packages
(``debian_bases``), and the nearest installable version of each package they hold
(``pip_versions``)."""
