"""The report of a pipeline run: Tables 7 and 8, the page funnel, figures, one HTML page."""
