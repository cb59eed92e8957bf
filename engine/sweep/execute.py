"""Run a sweep's points: every local core by default, or Ray tasks on a cluster.

Why the standard library's process pool by default: points are independent, CPU-bound and
small to describe, which is the process pool's case exactly; no service to start, nothing to
install. Why Ray beyond one machine: a grid of hundreds of thousands of points wants many
machines, and scheduling, retries and data shipping across them are Ray's job, not ours.

Either way the same function (``adapter.evaluate``) runs each point, results are stored as
they finish (so an interrupted sweep resumes), and the table is assembled in grid order from
the store, so the two paths give identical tables in the same order.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import engine
from engine.batching.calibrated import points_from_file
from engine.catalog import is_model_path, load_gpu, load_model, model_file
from engine.errors import UserError
from engine.limits import MAX_CONFIG_BYTES, MAX_MEASUREMENT_BYTES, sha256_limited
from engine.sweep import adapter
from engine.sweep.grid import Grid, Point, expand, parse_step_time, point_key
from engine.sweep.store import ResultStore
from engine.workload import WorkloadSpec

if TYPE_CHECKING:  # the pool is imported where a sweep starts one: a build has none to start
    from concurrent.futures import Future, ProcessPoolExecutor

RAY_EXTRA = "pip install 'sixty-days-engine[ray]' (or: pip install ray==2.60.0)"


class Sweep(Protocol):
    """What planning reads of a sweep: the spec's section (engine.experiments.sweep) is one."""

    @property
    def grid(self) -> Grid: ...
    @property
    def workload(self) -> WorkloadSpec: ...
    @property
    def block_size(self) -> int: ...
    @property
    def chunked_prefill(self) -> bool: ...
    @property
    def gpu_memory_utilization(self) -> float: ...


@dataclass(frozen=True)
class Plan:
    """The points of a sweep, their keys, and what a worker needs to evaluate them."""

    points: list[Point]
    keys: list[str]
    workload: dict[str, Any]  # adapter.workload_doc
    options: dict[str, Any]


def plan(section: Sweep, base_dir: Path) -> Plan:
    """Expand the grid and check every name and axis value before any simulation starts."""
    points = expand(section.grid)
    for point in points:
        adapter.check_supported(point)
    for field, names, load in (
        ("grid.gpu", section.grid.gpu, load_gpu),
        ("grid.model", section.grid.model, lambda name: load_model(adapter.model_source(name, base_dir))),
    ):
        for name in names:
            try:
                load(name)
            except UserError as err:
                raise UserError(err.message, field=field) from None
    files = _measured_files(section.grid.step_time, base_dir)
    options = {
        "block_size": section.block_size,
        "chunked_prefill": section.chunked_prefill,
        "gpu_memory_utilization": section.gpu_memory_utilization,
        "base_dir": str(base_dir),
        "files": files,  # step-time file → its content's hash
        "models": _model_files(section.grid.model, base_dir),  # a config.json model → its content's hash
    }
    context: dict[str, Any] = {
        "simulator": adapter.SIMULATOR,
        "workload": adapter.workload_fingerprint(section.workload, base_dir),
        "options": {k: v for k, v in options.items() if k not in ("base_dir", "files", "models")},
        "measured": files,
    }
    if options["models"]:  # only then: the keys of catalog-only grids stay those already stored
        context["models"] = options["models"]
    keys = [point_key(adapter.simulated(p), context) for p in points]  # same run, same key: run once
    return Plan(points, keys, adapter.workload_doc(section.workload, base_dir), options)


def _model_files(models: Iterable[str], base_dir: Path) -> dict[str, str]:
    """Each model given as a config.json path, by its content's hash: an edited config must not
    reuse the points of the old one (a catalog model is the engine's own data, in its code)."""
    out = {}
    for name in models:
        if not is_model_path(name, base_dir):
            continue
        path = model_file(adapter.model_source(name, base_dir))
        if path is not None:
            out[name] = sha256_limited(path, MAX_CONFIG_BYTES, "config.json", field="grid.model")
    return out


def _measured_files(step_times: Iterable[str], base_dir: Path) -> dict[str, str]:
    """Each step-time file's hash (a re-measured file must not reuse old results), after
    checking that it reads, so that a bad file stops the sweep before it starts."""
    out = {}
    for text in step_times:
        kind, rest = parse_step_time(text)
        if kind in ("measured", "calibrated"):
            path = base_dir / rest
            out[text] = sha256_limited(path, MAX_MEASUREMENT_BYTES, "step-time", field="grid.step_time")
            if kind == "measured":
                adapter.measured_step_time(str(path), out[text])
            else:  # the fit is per model and card, at each point; the file's steps are read now
                points_from_file(path)
    return out


def run(
    the_plan: Plan,
    store: ResultStore,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Evaluate the points not already in `store`; return every point's row in grid order."""
    pending = [(k, p) for k, p in zip(the_plan.keys, the_plan.points) if k not in store]
    pending = list(dict(pending).items())  # a key once, even if two points share it
    try:
        if pending:
            bar = _progress(len(pending), len(the_plan.points), progress)

            def done(key: str, point: Point, metrics: dict[str, Any]) -> None:
                store.add(key, point.to_dict(), metrics)
                bar.update(1)

            try:
                if ray_address is not None:
                    _run_ray(the_plan, pending, ray_address, done)
                else:
                    _run_local(the_plan, pending, workers or _cores(), done)
            finally:
                bar.close()
    finally:
        store.close()  # with nothing pending too: a remembered store notes what it read
    # the metrics in evaluate's order, whether computed now or read back (a store's lines are
    # written with sorted keys): a template iterating a row sees the same columns either way
    rows = []
    for key, point in zip(the_plan.keys, the_plan.points):
        metrics = store.get(key)
        rows.append({**point.to_dict(), **{name: metrics[name] for name in adapter.METRICS}})
    return rows


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _progress(total: int, points: int, enabled: bool) -> Any:
    """The progress bar a sweep prints while it runs (tqdm, imported here: every build's spec
    check reads this module, and only a sweep that runs draws a bar)."""
    from tqdm import tqdm

    resumed = points - total
    desc = f"sweep ({resumed:,} of {points:,} from the results file)" if resumed else "sweep"
    return tqdm(total=total, desc=desc, unit="point", disable=not enabled, file=sys.stderr)


Done = Callable[[str, Point, dict[str, Any]], Any]


# ---- local: a process pool ------------------------------------------------------------------

_WORKER: dict[str, Any] = {}


def _init_worker(workload: dict[str, Any], options: dict[str, Any]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle, once
    _WORKER.update(workload=workload, options=options)


def _evaluate_in_worker(point: Point) -> dict[str, Any]:
    return adapter.evaluate(point, _WORKER["workload"], _WORKER["options"])


def _run_local(the_plan: Plan, pending: list[tuple[str, Point]], workers: int, done: Done) -> None:
    if workers == 1 or len(pending) == 1:  # no pool to start for one worker or one point
        for key, point in pending:
            done(key, point, adapter.evaluate(point, the_plan.workload, the_plan.options))
        return
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    workers = min(workers, len(pending))
    pool = ProcessPoolExecutor(
        workers, initializer=_init_worker, initargs=(the_plan.workload, the_plan.options)
    )
    # At most a few points in flight per worker: an interrupt then loses little work, and
    # finished points reach the results file as they finish.
    queue = iter(pending)
    running: dict[Future[dict[str, Any]], tuple[str, Point]] = {}
    try:
        _top_up(pool, queue, running, 4 * workers)
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                key, point = running.pop(future)
                done(key, point, future.result())
            _top_up(pool, queue, running, 4 * workers)
    except BaseException:
        # Interrupted (or a bug): stop now rather than after the points in flight, which may
        # take minutes each; what finished is already in the results file.
        processes = list(getattr(pool, "_processes", {}).values())  # no public API before 3.14
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        raise
    pool.shutdown()


def _top_up(pool: ProcessPoolExecutor, queue: Any, running: dict[Any, Any], limit: int) -> None:
    while len(running) < limit:
        item = next(queue, None)
        if item is None:
            return
        running[pool.submit(_evaluate_in_worker, item[1])] = item


# ---- a cluster: Ray tasks -------------------------------------------------------------------


def _run_ray(the_plan: Plan, pending: list[tuple[str, Point]], address: str, done: Done) -> None:
    try:
        import ray
    except ImportError:
        raise UserError(f"--ray needs the optional 'ray' extra: {RAY_EXTRA}", field="ray.address") from None
    started = not ray.is_initialized()
    if started:
        # The workers run this checkout's engine package, shipped by Ray, whatever version (if
        # any) the cluster has installed: the table must not depend on where a point ran. (A
        # caller who started Ray itself has set up its workers' environment already.)
        package = {"py_modules": [str(Path(engine.__file__).parent)], "excludes": ["__pycache__"]}
        try:
            if address == "local":  # start a one-machine Ray instance here
                ray.init(include_dashboard=False, log_to_driver=False, runtime_env=package)
            else:
                ray.init(address=address, log_to_driver=False, runtime_env=package)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UserError(
                f"cannot connect to the Ray cluster at {address!r}: {exc}", field="ray.address"
            ) from None
    remote = ray.remote(_evaluate_ray)
    workload, options = ray.put(the_plan.workload), ray.put(the_plan.options)
    by_ref = {remote.remote(point, workload, options): (key, point) for key, point in pending}
    waiting = list(by_ref)
    try:
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=min(len(waiting), 64), timeout=1.0)
            for ref in ready:
                key, point = by_ref.pop(ref)
                done(key, point, ray.get(ref))
    finally:
        for ref in waiting:
            ray.cancel(ref)
        if started:
            ray.shutdown()


def _evaluate_ray(point: Point, workload: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """A Ray task: the same evaluation; the worker process keeps its workloads between tasks."""
    return adapter.evaluate(point, workload, options)
