"""One module per kind of experiment: each registers its spec section (engine.sections) and turns
it into a plain, JSON-ready dict. The section's model opens its module; the lab, which has more
to it (its model, judging a run, measuring, reading the measurement back), is a package whose
``__init__`` registers it.

Experiments call the pure engines (kvcache, batching, queueing) and touch files only to read
inputs the spec names (a workload trace, a measurement file, an earlier day's spec). Every module
in this package is imported when the section registry is first read, so a new kind is a new
module here that calls ``register_section``.
"""

from engine.sections import Inputs, SpecLocation, blame

__all__ = ["Inputs", "SpecLocation", "blame"]
