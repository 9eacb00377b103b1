"""Human-facing reports: a sweep's trials as one self-contained HTML page.

``sweep_data.from_job`` reads a HyperparameterTuningJob (REST JSON) into a ``Sweep``;
``charts`` and ``parallel`` draw it with matplotlib as inline SVG; ``page.trials_page``
puts the charts and a sortable table on one page that needs no network.
"""
