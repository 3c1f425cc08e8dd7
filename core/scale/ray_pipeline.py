"""Batch conversion on Ray: pages rendered and drafted on CPU tasks, decoded by model actors.

    driver: plan documents (``core.run.plan_document``: the resume rules of one machine)
            ->  each document to one model actor (the one with least work)
    render tasks:  render_and_draft        CPU tasks, one CPU each, retried if their worker dies
    model actors:  one per GPU (or CPU actors without GPUs), each holding one model; a document's
                   pages reach its actor in page order, so the actor's engine keeps the document's
                   history and learned notation (``Engine.start_document``) exactly as
                   ``hsd convert`` does; actors restart if killed and the pages they held run again
    driver: results as they come -> save each page (atomic, resumable) -> Markdown when a document
            is complete

Pages are drafted ahead: each actor's first pages go to render tasks as soon as the actor is
created, so they are drafted while its model loads, and ``RayOptions.batch_size`` pages stay in
flight ahead of the one it decodes. That bounds memory too: only rendered pages waiting for their
actor are held, and the driver keeps page results (no images) of the documents still open. Documents run in
parallel, the pages of one document one after the other (each is drafted from the ones before it).

Failures: a page that raises is retried (``retries``) inside its worker, then recorded as failed in
its document's statistics while the rest goes on; a page whose worker process dies is run again
(Ray task retries / actor restarts, ``max_task_retries``; a restarted actor has lost the history
of the document it was on, so its next pages cost more passes, never other Markdown); pages already
saved are skipped on a re-run, with the same rules as ``hsd convert``, and join the document's
history first.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from core import tuning
from core.errors import HSDError
from core.scale.jobs import DocumentFailure, DocumentJob, expand_inputs, plan_documents
from core.scale.pages import RenderedPage, convert_rendered, render_and_draft

#: Environment of every worker: library chatter off (the CLI does the same for itself).
WORKER_ENV = {"TRANSFORMERS_VERBOSITY": "error", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
              "TOKENIZERS_PARALLELISM": "false"}


@dataclass
class RayOptions:
    address: str | None = None          # None or "local": start a local Ray instance; else join it
    actors: int | None = None           # model actors; default: GPUs / gpus_per_actor, else 1
    gpus_per_actor: float = tuning.RAY_GPUS_PER_ACTOR     # below 1 packs several models on a GPU
    batch_size: int = tuning.RAY_PAGES_AHEAD              # pages sent to an actor ahead of the one it decodes
    retries: int = tuning.RAY_RETRIES                     # further attempts of a page that raised, then "failed"
    max_task_retries: int = tuning.RAY_TASK_RETRIES       # re-runs of a page whose worker process died
    cpus_per_actor: float = tuning.RAY_CPUS_PER_ACTOR     # CPUs reserved per model actor
    render_cpus: float = tuning.RAY_RENDER_CPUS           # CPUs per render+draft task
    num_cpus: int | None = None         # local instance only: CPUs Ray may use (default: all)
    progress_every: float = tuning.RAY_PROGRESS_SECONDS   # seconds between progress lines


@dataclass
class ActorLoad:
    pages: int = 0
    busy_seconds: float = 0.0
    first_seen: float = 0.0
    gpu_utilization: int | None = None  # last sample, percent (CUDA with NVML only)


@dataclass
class Progress:
    documents_total: int = 0
    documents_done: int = 0
    pages_total: int = 0                # pages to convert in this run (finished ones excluded)
    pages_done: int = 0
    pages_failed: int = 0
    pages_skipped: int = 0              # finished by an earlier run
    elapsed: float = 0.0
    actors: dict[str, ActorLoad] = field(default_factory=dict)

    @property
    def pages_per_second(self) -> float:
        return self.pages_done / self.elapsed if self.elapsed > 0 else 0.0

    def line(self) -> str:
        now = time.perf_counter()
        loads = []
        for name, a in sorted(self.actors.items()):
            span = max(1e-9, now - a.first_seen)
            util = f", gpu {a.gpu_utilization}%" if a.gpu_utilization is not None else ""
            loads.append(f"{name} {a.pages}p {min(100, round(100 * a.busy_seconds / span))}% busy{util}")
        failed = f", {self.pages_failed} failed" if self.pages_failed else ""
        return (f"documents {self.documents_done}/{self.documents_total}, pages {self.pages_done}/"
                f"{self.pages_total}{failed}, {self.pages_per_second:.2f} pages/s"
                + (f" | {'; '.join(loads)}" if loads else ""))


@dataclass
class RunReport:
    documents: list[dict]               # document_stats(...) per converted document, input order
    failures: list[DocumentFailure]     # documents that could not be opened
    progress: Progress

    @property
    def failed(self) -> bool:
        return bool(self.failures) or any(d["totals"]["failed_pages"] for d in self.documents)


# --- Ray workers ---------------------------------------------------------------------------------


def _render(doc: int, path: str, index: int, dpi: int, drafter: str, password: str | None, retries: int,
            rotate: str = "off") -> bytes:
    return render_and_draft(doc, path, index, dpi, drafter, password=password, retries=retries, rotate=rotate).dumps()



class _ModelActor:
    """One model per actor (per GPU): decodes the pages of the documents it is given, in order."""

    def __init__(self, config, engine_factory, retries: int):
        from core.api import quiet_libraries as _quiet_libraries
        from core.engine import Engine

        _quiet_libraries()
        self.retries = retries
        self.name = _actor_name()
        self.load_error: HSDError | None = None
        try:
            self.engine = (engine_factory or Engine)(config)
            self.engine.target  # load now, not inside the first page's timing
        except HSDError as exc:
            # Reported as a "fatal" result instead: Ray hands exceptions to the driver as text only
            # (with traceback), and the user should see the one-line error.
            self.load_error = exc

    def remember(self, key: str, saved: list) -> None:
        """Pages of document ``key`` saved by an earlier run join its history, as on resume in
        ``hsd convert`` (``Engine.remember_pages``)."""
        if self.load_error is None:
            self.engine.remember_pages(key, saved)

    def convert(self, key: str, data: bytes) -> dict:
        """Decode one rendered page of document ``key``: its history is the pages this actor
        decoded (or remembered) of the same document before it."""
        page = RenderedPage.loads(data)
        fatal = str(self.load_error) if self.load_error is not None else page.fatal
        t0 = time.perf_counter()
        result = None
        if not fatal:
            self.engine.start_document(key)
            result = convert_rendered(self.engine, page, self.retries)
        return {"doc": page.doc, "index": page.index, "result": pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL),
                "actor": self.name, "busy": time.perf_counter() - t0, "gpu": _gpu_utilization(),
                "fatal": fatal or ""}


def _actor_name() -> str:
    import socket

    gpus = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    where = f"gpu{gpus}" if gpus else f"pid{os.getpid()}"
    return f"{socket.gethostname()}/{where}"


def _gpu_utilization() -> int:
    """This actor's GPU utilisation in percent (needs NVML), -1 where unknown."""
    try:
        import torch

        if torch.cuda.is_available():
            return int(torch.cuda.utilization())
    except Exception:
        pass
    return -1


# --- driver --------------------------------------------------------------------------------------


def _require_ray():
    try:
        import ray
    except ImportError:
        raise HSDError("--ray needs Ray: pip install 'hsd-studio[ray]'") from None
    return ray


def connect(address: str | None, num_cpus: int | None = None) -> bool:
    """Start a local Ray instance (``address`` None or "local") or join a cluster; True when this
    call started or joined it (and so should shut it down), False when Ray was already running."""
    ray = _require_ray()
    if ray.is_initialized():
        return False
    runtime_env = {"env_vars": dict(WORKER_ENV)}
    try:
        if address in (None, "", "local"):
            ray.init(num_cpus=num_cpus, include_dashboard=False, runtime_env=runtime_env,
                     log_to_driver=True, logging_level="WARNING")
        else:
            ray.init(address=address, runtime_env=runtime_env, logging_level="WARNING")
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise HSDError(f"cannot start or join Ray at {address or 'local'}: {exc}") from None
    return True


def convert_with_ray(inputs, output, config, *, pages: str | None = None, password: str | None = None,
                     fresh: bool = False, options: RayOptions | None = None,
                     engine_factory: Callable | None = None, quiet: bool = True,
                     on_progress: Callable[[Progress], None] | None = None) -> RunReport:
    """Convert ``inputs`` (files or folders) into ``output`` on Ray: the Python face of
    ``hsd convert --ray``. ``config`` is an ``EngineConfig``; output, resume rules and statistics are
    those of ``hsd convert``. ``engine_factory(config) -> Engine`` replaces ``Engine`` in the actors
    (tests, custom targets); it must be importable or picklable by the workers.
    ``on_progress`` runs in the driver after every page; raising from it stops the run (finished
    pages are kept, as after Ctrl-C).
    """
    from core.api import output_paths, settings_of

    options = options or RayOptions()
    _require_ray()  # before any output folder is touched
    inputs = expand_inputs(inputs)
    outputs = output_paths(inputs, Path(output))
    settings = settings_of(config)
    plan = plan_documents(inputs, outputs, settings, pages, password, fresh)
    jobs = {j.id: j for j in plan if isinstance(j, DocumentJob)}
    failures = [f for f in plan if isinstance(f, DocumentFailure)]
    progress = Progress(documents_total=len(jobs), pages_total=sum(len(j.todo) for j in jobs.values()),
                        pages_skipped=sum(len(j.plan.kept) for j in jobs.values()))
    stats: dict[int, dict] = {}
    say = (lambda text: None) if quiet else (lambda text: print(text, file=sys.stderr, flush=True))

    def finish(job: DocumentJob) -> None:
        stats[job.id] = job.finish(settings)
        progress.documents_done += 1
        say(f"{job.input_path} -> {job.output_path}")

    for job in jobs.values():  # nothing left to do: assemble, as a re-run of hsd convert does
        if not job.todo:
            finish(job)
    if progress.pages_total:
        if progress.pages_skipped:
            say(f"hsd: resuming: {progress.pages_skipped} page(s) finished by an earlier run are kept")
        started = connect(options.address, options.num_cpus)
        try:
            _run_pipeline(jobs, config, password, options, engine_factory, progress, finish, say, on_progress)
        finally:
            if started:
                import ray

                ray.shutdown()
    ordered = [stats[i] for i in sorted(stats)]
    return RunReport(documents=ordered, failures=failures, progress=progress)


class _Stream:
    """One model actor's work: whole documents taken from ``queue`` one after the other, their
    pages submitted in order (the saved pages before each first joining the document's history)."""

    def __init__(self, actor, queue: list[DocumentJob], submit_render):
        self.actor, self.queue, self.submit_render = actor, queue, submit_render
        self.pages: list[tuple[DocumentJob, int, list]] = []

    def submit_next(self):
        """Submit this actor's next page: ``(result, rendered page)`` references, None when all are out."""
        while not self.pages:
            if not self.queue:
                return None
            job = self.queue.pop(0)
            self.pages = [(job, index, saved) for index, saved in job.plan.steps()]
        job, index, saved = self.pages.pop(0)
        key = str(job.input_path)
        if saved:
            self.actor.remember.remote(key, saved)
        rendered = self.submit_render(job, index)
        return self.actor.convert.remote(key, rendered), rendered


def _run_pipeline(jobs: dict[int, DocumentJob], config, password: str | None, options: RayOptions,
                  engine_factory, progress: Progress, finish, say, on_progress) -> None:
    import ray

    gpus = int(ray.cluster_resources().get("GPU", 0))
    per_gpu = options.gpus_per_actor if options.gpus_per_actor > 0 else 1.0
    todo = [j for j in jobs.values() if j.todo]
    actors = min(len(todo), options.actors or max(1, int(gpus / per_gpu + 1e-9)))
    cpus = float(ray.cluster_resources().get("CPU", 0))
    if actors * options.cpus_per_actor + options.render_cpus > cpus + 1e-9:
        # the render tasks would wait forever for a CPU
        raise HSDError(f"{actors} model actor(s) x {options.cpus_per_actor:g} CPU leave no CPU for "
                       f"rendering (the cluster has {cpus:g}); use fewer --ray-actors or "
                       "--ray-cpus-per-actor")
    actor_config = config
    if gpus and (config.device or "").startswith("cuda:"):
        actor_config = replace(config, device="cuda")  # Ray gives each actor its own GPU as cuda:0
    render = ray.remote(_render).options(num_cpus=options.render_cpus, memory=tuning.RAY_RENDER_TASK_MEMORY,
                                         max_retries=options.max_task_retries)
    # A killed actor is restarted and the pages it held run again; a page that kills its process
    # every time would loop forever, so the re-runs are capped.
    model = ray.remote(_ModelActor).options(num_gpus=per_gpu if gpus else 0, num_cpus=options.cpus_per_actor,
                                            max_restarts=-1, max_task_retries=options.max_task_retries)
    def submit_render(job: DocumentJob, index: int):
        return render.remote(job.id, str(job.input_path), index, config.dpi, config.drafter, password,
                             options.retries, config.rotate)

    pool = [model.remote(actor_config, engine_factory, options.retries) for _ in range(actors)]
    queue = list(todo)  # shared: an actor takes the next document when it has submitted its last page
    streams = [_Stream(actor, queue, submit_render) for actor in pool]
    say(f"hsd: ray: {progress.pages_total} page(s) of {len(jobs)} document(s) on {actors} model "
        f"actor(s) ({f'{gpus} GPU(s)' if gpus else 'CPU only'})")
    pending: dict = {}  # result reference -> (stream, rendered page reference): pages in flight
    ahead = max(1, options.batch_size)  # pages submitted to an actor beyond the one it decodes
    for stream in streams:
        for _ in range(ahead + 1):
            refs = stream.submit_next()
            if refs is None:
                break
            pending[refs[0]] = (stream, refs[1])
    t0 = time.perf_counter()
    last = t0
    try:
        while pending:
            (ready,), _ = ray.wait(list(pending), num_returns=1)
            stream, _ = pending.pop(ready)
            row = ray.get(ready)
            refs = stream.submit_next()
            if refs is not None:
                pending[refs[0]] = (stream, refs[1])
            if row["fatal"]:
                raise HSDError(row["fatal"])
            job = jobs.get(int(row["doc"]))
            result = pickle.loads(row["result"])
            if job is None or not job.add(result):
                continue
            now = time.perf_counter()
            progress.elapsed = now - t0
            progress.pages_done += 1
            if result.error:
                progress.pages_failed += 1
                say(f"hsd: warning: {job.input_path}: page {result.page} failed: {result.error}")
            busy = float(row["busy"])
            load = progress.actors.setdefault(row["actor"], ActorLoad(first_seen=now - busy))
            load.pages += 1
            load.busy_seconds += busy
            load.gpu_utilization = None if int(row["gpu"]) < 0 else int(row["gpu"])
            if job.done:
                finish(job)
            if on_progress is not None:
                on_progress(progress)
            if now - last >= options.progress_every:
                say(f"hsd: {progress.line()}")
                last = now
    except KeyboardInterrupt:
        say(f"\nhsd: interrupted; {progress.pages_done} page(s) converted in this run are kept, "
            "run the same command again to resume")
        raise
    except HSDError:
        raise
    except Exception as exc:
        cause = _user_error(exc)
        if cause is not None:
            raise cause from None
        raise HSDError(f"the Ray pipeline failed after {progress.pages_done} page(s) (those are kept; "
                       f"run again to resume): {_short(exc)}") from exc
    finally:
        _stop(ray, pool, [rendered for _, rendered in pending.values()])
    progress.elapsed = time.perf_counter() - t0
    say(f"hsd: {progress.line()}")


def _stop(ray, actors: list, renders: list) -> None:
    """Stop what is still running (an interrupted or failed run): its pages are not saved."""
    for ref in renders:
        try:
            ray.cancel(ref)
        except Exception:
            pass
    for actor in actors:
        try:
            ray.kill(actor)
        except Exception:
            pass


def _user_error(exc: BaseException) -> HSDError | None:
    """The HSDError (bad model folder, unusable drafter, ...) inside a Ray error, if there is one.

    Ray's task errors subclass the original exception type but carry a traceback as their message;
    the original is their ``cause``, which is preferred."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        cause = getattr(exc, "cause", None)
        if isinstance(exc, HSDError) and not isinstance(cause, BaseException):
            return exc
        exc = cause if isinstance(cause, BaseException) else (exc.__cause__ or exc.__context__)
    return None


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]


__all__ = ["RayOptions", "Progress", "RunReport", "connect", "convert_with_ray"]
