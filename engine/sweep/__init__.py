"""Capacity planning: run the serving simulator over a grid of configurations against latency
targets, and find the cheapest configurations that meet them.

The pieces, one idea each:

- ``grid``: the grid of a spec's ``sweep`` section (its axes; the section itself, with its
  targets, workload and where to run, is engine.experiments.sweep) and the points it expands
  to, each with a stable key;
- ``adapter``: the one function that turns a point and a workload into metrics, the only place
  that knows the simulator's API;
- ``store``: a results file keyed by point, so an interrupted sweep resumes without recomputing;
- ``execute``: the points on every local core (a process pool) or as Ray tasks on a cluster,
  returned in grid order either way;
- ``prices`` and ``analysis``: cost per GPU-hour from the catalog, which points meet the targets,
  the cheapest of them, and the throughput-versus-latency Pareto front;
- ``table``: the CSV of every point.
"""
