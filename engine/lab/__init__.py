"""Any lab becomes a day: the author's own experiment, run once, its figures kept with provenance.

A lab is a script in a folder beside the spec (``days/dayNN.lab/``). ``python -m engine lab``
runs it with a timeout, keeps its output as the transcript and the figures it recorded through
``labkit`` (value + unit), and writes ``days/dayNN.measured/<machine>.json``. A build reads that
file back and never reruns the lab (Quarto's ``freeze``); a lab whose files changed since is
flagged stale. Modules: ``units`` (the unit table), ``spec`` (the section model), ``labfiles``
(which files are the lab, and their hash), ``machine`` (provenance), ``runner`` (the
subprocess), ``store`` (the measurement file), ``section`` (what a build sees), ``reference``
(published figures shown beside measured ones), ``labkit`` (the helper a lab imports).
"""
