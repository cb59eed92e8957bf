"""Any lab becomes a day: the author's own experiment, run once, its figures kept with provenance.

A lab is a script in a folder beside the spec (``days/dayNN.lab/``). ``python -m engine lab``
runs it with a timeout, keeps its output as the transcript and the figures it recorded through
``labkit`` (value + unit), and writes ``days/dayNN.measured/<machine>.json``. A build reads that
file back and never reruns the lab (Quarto's ``freeze``); a lab whose files changed since is
flagged stale. This package is the run itself: ``labfiles`` (which files are the lab, and their
hash), ``machine`` (provenance), ``runner`` with ``processes`` and ``watch`` (the contained
subprocess), ``output`` (figures read off printed output), ``store`` (the measurement file),
``reference`` (published figures shown beside measured ones), ``kit`` (labkit, the helper a lab
imports). The section a spec writes (its model, judging a run, ``make lab-dayNN``, what a build
reads back) is engine.experiments.lab.
"""
