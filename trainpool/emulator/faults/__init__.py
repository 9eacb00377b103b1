"""Faults a test or a demo asks for (not Vertex's behaviour: that is ``jobs.failure_rules``)."""
