"""The live preview behind ``python -m engine serve``, for one person on one machine.

state: what the pages show (the content version they poll, what is being rebuilt, each day's
last error, fresh drafts not yet in out/); builder: the background builds, drafts before images;
server: the loopback HTTP server that serves out/ and refuses everything else.
"""
