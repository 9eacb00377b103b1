"""Schedules fired as Vertex fires them, on the emulator's clock: the rules (``rules``), the
firer thread (``firer``), and each schedule's queue and log (``ledger``)."""
