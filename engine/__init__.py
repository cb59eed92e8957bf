"""The engine behind the '60 days of system design' posts: spec → numbers → drafts.

Run it as ``python -m engine``. The math lives in pure modules (kvcache, batching, queueing);
files, the clock and the GPU are touched only at the edges (cli, pipeline, gpubench).
"""
