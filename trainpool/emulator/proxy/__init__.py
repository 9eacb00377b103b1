"""The emulator's HTTPS proxy and its certificates (:mod:`.server`, :mod:`.certs`)."""
