"""Batch conversion on Ray: the pages of each document decoded by a model actor, each document run
by ``core.run.DocumentRun`` as on one machine.

    driver:  one ``DocumentRun`` per document (plan and resume, pages rendered ahead of the
             decode, each page saved as it comes, the Markdown): ``core.run``'s own loop, so the
             events, the files and the statistics are those of ``hsd convert``
    drafting tasks: the run's drafter is ``core.scale.drafting.ClusterDrafter``: each page is
             drafted on a Ray CPU task, several pages of a document at once (the cluster's CPUs
             left beside the model actors, shared by the documents running at once)
    model actors: one per GPU (or CPU actors without GPUs), each holding one model; the run's
             ``PageDecoder`` is ``RayPageDecoder``: it sends each page to its actor as soon as it
             is rendered, with its drafts or, where they are not in yet, its drafting task's
             reference; the actor's engine decodes it (``Engine.decode_image``), takes the drafts
             when they come as on one machine, and sends the result back. A document's pages
             reach one actor in page order, so the actor's engine keeps the document's history
             and learned notation exactly as ``hsd convert`` does. The page's events
             (``TextAppended``, ``RegionVerified``) stream back while it decodes.

Documents run in parallel, one per actor (``RayDocuments``: a run per actor on a thread of the
driver, their events read in input order), the pages of one document one after the other (each
is drafted from the ones before it). Pages are drafted ahead: ``RayOptions.batch_size`` pages of a
document are rendered beyond the one its actor decodes, the first while the model loads, and
``RayOptions.drafting_window`` pages are drafting on the cluster at once.

Failures: a page that raises is retried (``retries``) inside its actor, then recorded as failed in
its document's statistics while the rest goes on; a page whose actor process dies is sent again to
the restarted actor (``max_task_retries``; a restarted actor has lost the history of the document it
was on, so its next pages cost more passes, never other Markdown); pages already saved are skipped
on a re-run, with the same rules as ``hsd convert``, and join the document's history first.
"""

from __future__ import annotations

import os
import pickle
import queue
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Callable, Iterator

from core import tuning
from core.drafters.background import DraftJob
from core.drafters.base import Region
from core.errors import CancelledError, HSDError
from core.events import RegionVerified
from core.page_pipeline import DraftedPage, failed_page, page_error

#: Environment of every worker: library chatter off (the CLI does the same for itself).
WORKER_ENV = {"TRANSFORMERS_VERBOSITY": "error", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
              "TOKENIZERS_PARALLELISM": "false"}


@dataclass
class RayOptions:
    address: str | None = None          # None or "local": start a local Ray instance; else join it
    actors: int | None = None           # model actors; default: GPUs / gpus_per_actor, else 1
    gpus_per_actor: float = tuning.RAY_GPUS_PER_ACTOR     # below 1 packs several models on a GPU
    batch_size: int = tuning.RAY_PAGES_AHEAD              # pages drafted ahead of the one an actor decodes
    retries: int = tuning.RAY_RETRIES                     # further attempts of a page that raised, then "failed"
    max_task_retries: int = tuning.RAY_TASK_RETRIES       # re-sends of a page whose actor process died
    cpus_per_actor: float = tuning.RAY_CPUS_PER_ACTOR     # CPUs reserved per model actor
    render_cpus: float = tuning.RAY_RENDER_CPUS           # CPUs of one page's drafting task
    drafting_window: int | None = None  # pages of a document drafting at once; None: the CPUs beside
                                        # the actors shared by the documents running at once
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
class DocumentFailure:
    """A document that could not be opened or planned (the command prints it and goes on)."""

    input_path: Path
    message: str


@dataclass
class RunReport:
    documents: list[dict]               # document_stats(...) per converted document, input order
    failures: list[DocumentFailure]     # documents that could not be opened
    progress: Progress

    @property
    def failed(self) -> bool:
        return bool(self.failures) or any(d["totals"]["failed_pages"] for d in self.documents)


# --- the model actor -----------------------------------------------------------------------------


@dataclass
class ShippedPage:
    """A rendered page on its way to a model actor: what ``DraftedPage`` holds. Its drafting
    finished: the regions, the drafter's error and seconds travel (a drafter does not); still
    running: ``drafts`` is its drafting task's reference (``core.scale.drafting.ClusterDrafts``),
    whose regions the actor's engine takes while it decodes the page."""

    number: int
    width: float
    height: float
    image: object                    # PIL image (pickled as its pixels)
    regions: list[Region]
    draft_error: str | None
    draft_seconds: float
    seconds: dict
    drafts: object = None            # the drafting task's reference, where the drafts were not in

    def drafting(self):
        """The page's drafting as the engine takes it (``core.page_job.Drafting``)."""
        if self.drafts is not None:
            from core.scale.drafting import ClusterDrafts

            return ClusterDrafts(self.drafts)
        return DraftJob.finished(list(self.regions), self.draft_error, self.draft_seconds)

    def drafted_page(self, drafting=None) -> DraftedPage:
        drafts = drafting if drafting is not None else self.drafting()
        return DraftedPage(self.number, self.width, self.height, self.image, drafts, dict(self.seconds))


class ModelActor:
    """One model per actor (per GPU): decodes the pages it is sent, in order. Plain Python: Ray
    makes it an actor (``ray.remote``), a test may call it directly.

    A page may come before its drafts (``ShippedPage.drafts``). Where its engine drafts beside the
    decode (``Engine.drafts_beside_decode``: on a GPU, or ``--background-drafting on``), the page
    is decoded at once and the drafts join its decode when they come, as on one machine; a page
    whose decode ends first waits here for them (``finish``) while the next page decodes.
    Elsewhere the drafts come first, as on one machine where the drafter and the decode would
    share the CPU."""

    def __init__(self, config, engine_factory, retries: int):
        from core.api import quiet_libraries
        from core.engine import Engine

        quiet_libraries()
        self.retries = retries
        self.name = _actor_name()
        self.load_error: str = ""
        self._waiting: dict[tuple, object] = {}  # (document, page number) -> its DecodedPage, drafts to come
        try:
            self.engine = (engine_factory or Engine)(config)
            self.engine.prepare()  # load now, not inside the first page's timing
        except HSDError as exc:
            # Told by ``ready`` instead: Ray hands exceptions to the driver as text only (with
            # traceback), and the user should see the one-line error.
            self.load_error = str(exc)

    def ready(self) -> str:
        """The model's load error ("" once loaded)."""
        return self.load_error

    def decode(self, key: str, remembered: list, page: ShippedPage) -> Iterator[dict]:
        """Decode ``page`` of document ``key``, after the pages of it saved by an earlier run
        (``remembered``) join its history (``Engine.remember_pages``, which also starts the
        document): its history is the pages this actor decoded or remembered of it before. A page
        that raises is tried ``retries`` more times, then recorded as failed.

        A generator (on Ray a streaming one): ``{"events": [...]}`` with the events the page's
        decode told (``TextAppended``, ``RegionVerified``) every ``tuning.PROGRESS_TICK_SECONDS``
        while it decodes (the progress line, which shows them, is drawn no more often), then
        ``{"result": ...}`` with the pickled ``PageResult`` and what the actor did; or, where the
        decode ended before the page's drafts came, ``{"so_far": ...}`` with its result at the end
        of the decode (no regions yet; ``finish`` gives the whole one)."""
        t0 = time.perf_counter()
        self._waiting = {held: page for held, page in self._waiting.items() if held[0] == key}
        self.engine.remember_pages(key, remembered)
        told: queue.SimpleQueue = queue.SimpleQueue()
        outcome: dict = {}
        decoding = threading.Thread(target=self._decode_page, args=(page, told.put, outcome),
                                    name="hsd-actor-decode", daemon=True)
        decoding.start()
        while decoding.is_alive():
            decoding.join(timeout=tuning.PROGRESS_TICK_SECONDS)
            events = _drain(told)
            if events:
                yield {"events": events}
        events = _drain(told)
        if events:
            yield {"events": events}
        if "raised" in outcome:
            raise outcome["raised"]
        told = {"actor": self.name, "busy": time.perf_counter() - t0, "gpu": _gpu_utilization()}
        if "decoded" in outcome:  # its drafts have not come: its result so far, the page kept for them
            self._waiting[(key, page.number)] = outcome["decoded"]
            yield dict(told, so_far=_pickled(outcome["decoded"].result_so_far()))
        else:
            yield dict(told, result=_pickled(outcome["result"]))

    def finish(self, key: str, number: int) -> bytes | None:
        """The pickled result of page ``number`` of document ``key``, whose decode ended before its
        drafts came (``decode``'s ``so_far``), once they have; None where this actor does not hold
        the page (a restarted actor: the caller decodes it again)."""
        decoded = self._waiting.pop((key, number), None)
        return None if decoded is None else _pickled(decoded.finish())

    def _decode_page(self, page: ShippedPage, on_event, outcome: dict) -> None:
        """The decode of ``page`` with its retries, on a thread of the actor: ``outcome["result"]``,
        ``outcome["decoded"]`` (its ``DecodedPage``) where its decode ended before its drafts came,
        or ``outcome["raised"]`` for what must not be recorded as a failed page."""
        error: BaseException | None = None
        try:
            drafting = page.drafting()  # one for every attempt: its drafts come once
            if not self.engine.drafts_beside_decode:
                drafting.result()  # the drafter first, as on one machine
            for _ in range(self.retries + 1):
                try:
                    decoded = self.engine.decode_image(page.drafted_page(drafting), on_event=on_event)
                    if decoded.drafted():
                        outcome["result"] = decoded.finish()
                    else:
                        outcome["decoded"] = decoded
                    return
                except (KeyboardInterrupt, CancelledError):
                    raise
                except Exception as exc:
                    error = exc
                    _free_memory()
            outcome["result"] = failed_page(page.number, page.width, page.height, self.engine.config.mode,
                                            page_error(error))
        except BaseException as exc:  # raised where the generator runs
            outcome["raised"] = exc


def _pickled(result) -> bytes:
    return pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)


def _drain(told: queue.SimpleQueue) -> list:
    events = []
    while True:
        try:
            events.append(told.get_nowait())
        except queue.Empty:
            return events


def _free_memory() -> None:
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:
        pass


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


# --- the driver ----------------------------------------------------------------------------------


def require_ray():
    try:
        import ray
    except ImportError:
        raise HSDError("--ray needs Ray: pip install 'hsd-studio[ray]'") from None
    return ray


def connect(address: str | None, num_cpus: int | None = None) -> bool:
    """Start a local Ray instance (``address`` None or "local") or join a cluster; True when this
    call started or joined it (and so should shut it down), False when Ray was already running.
    A local instance's workers run at this process's priority, not Ray's nice 15
    (``core.scale.priority``); a joined cluster keeps its own."""
    from core.scale.priority import local_workers_at_this_priority

    ray = require_ray()
    if ray.is_initialized():
        return False
    runtime_env = {"env_vars": dict(WORKER_ENV)}
    try:
        if address in (None, "", "local"):
            with local_workers_at_this_priority():
                ray.init(num_cpus=num_cpus, include_dashboard=False, runtime_env=runtime_env,
                         log_to_driver=True, logging_level="WARNING")
        else:
            ray.init(address=address, runtime_env=runtime_env, logging_level="WARNING")
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise HSDError(f"cannot start or join Ray at {address or 'local'}: {exc}") from None
    return True


class ModelActors:
    """The model actors of a run, started on first need (a run whose pages were all kept starts
    neither Ray nor a model): ``slots`` how many documents run at once, ``actor(slot)`` the
    slot's actor, its model loaded (the load error raised as the user's one line), ``drafter``
    a document's drafter on the cluster's CPUs, ``loads`` what each actor did."""

    def __init__(self, config, options: RayOptions, engine_factory=None, documents: int = 1,
                 on_connect: Callable[[int], None] | None = None):
        """``on_connect(slots)``: told once connected how many documents may run at once."""
        self.config, self.options, self.engine_factory = config, options, engine_factory
        self.documents = max(1, documents)
        self.on_connect = on_connect
        self._error: HSDError | None = None
        self.loads: dict[str, ActorLoad] = {}
        self._lock = threading.Lock()
        self._actors: dict[int, object] = {}
        self._started: bool | None = None  # None: not connected; True: this run started Ray
        self._slots: int | None = None
        self._model = None
        self._window = 1  # pages of a document drafting at once
        self._drafting = None  # the drafting task (``core.scale.drafting.drafting_task``)
        self._ends = None  # the documents' runs that have ended, as their tasks ask (``RunEnds``)

    def _connect(self) -> None:
        if self._error is not None:
            raise self._error
        if self._started is not None:
            return
        try:
            self._start()
        except HSDError as exc:
            self._error = exc
            raise
        if self.on_connect is not None:
            self.on_connect(self._slots)

    def _start(self) -> None:
        options = self.options
        self._started = connect(options.address, options.num_cpus)
        import ray

        gpus = int(ray.cluster_resources().get("GPU", 0))
        per_gpu = options.gpus_per_actor if options.gpus_per_actor > 0 else 1.0
        actors = min(self.documents, options.actors or max(1, int(gpus / per_gpu + 1e-9)))
        cpus = float(ray.cluster_resources().get("CPU", 0))
        free = cpus - actors * options.cpus_per_actor
        if free + 1e-9 < options.render_cpus:
            # no drafting task could ever run beside the actors
            raise HSDError(f"{actors} model actor(s) x {options.cpus_per_actor:g} CPU leave no CPU for "
                           f"drafting (the cluster has {cpus:g}); use fewer --ray-actors or "
                           "--ray-cpus-per-actor")
        # the CPUs beside the actors, shared by the documents running at once (one per actor)
        self._window = options.drafting_window or max(1, int(free / options.render_cpus / actors + 1e-9))
        config = self.config
        if gpus and (config.device or "").startswith("cuda:"):
            config = replace(config, device="cuda")  # Ray gives each actor its own GPU as cuda:0
        self._actor_config = config
        # A killed actor is restarted and the page it held is sent again; a page that kills its
        # process every time would loop forever, so the re-sends are capped.
        self._model = ray.remote(ModelActor).options(num_gpus=per_gpu if gpus else 0,
                                                     num_cpus=options.cpus_per_actor, max_restarts=-1,
                                                     max_task_retries=options.max_task_retries)
        from core.scale.drafting import drafting_task, run_ends

        self._drafting = drafting_task(options.render_cpus, tuning.RAY_RENDER_TASK_MEMORY, options.max_task_retries)
        self._ends = run_ends()
        self._slots = actors

    def loaded(self, slot: int) -> bool:
        return slot in self._actors

    def drafter(self, spec: str, here):
        """A document's drafter (``ClusterDrafter``) drafting with ``spec`` on Ray CPU tasks
        (``here``: the drafter ``spec`` builds in the driver); connects to Ray."""
        from core.scale.drafting import ClusterDrafter, RunEnd

        with self._lock:
            self._connect()
            ends = self._ends
        return ClusterDrafter(spec, here, self._window, self._drafting, self.options.render_cpus, RunEnd(ends))

    def actor(self, slot: int):
        """The actor of ``slot``, started and its model loaded."""
        with self._lock:
            actor = self._actors.get(slot)
            if actor is not None:
                return actor
            self._connect()
            actor = self._model.remote(self._actor_config, self.engine_factory, self.options.retries)
        error = _get(actor.ready.remote())
        if error:
            raise HSDError(error)
        with self._lock:
            self._actors[slot] = actor
        return actor

    def record(self, row: dict) -> None:
        """What an actor said about a page it decoded (``Progress.actors``)."""
        now, busy = time.perf_counter(), float(row["busy"])
        with self._lock:
            load = self.loads.setdefault(row["actor"], ActorLoad(first_seen=now - busy))
            load.pages += 1
            load.busy_seconds += busy
            load.gpu_utilization = None if int(row["gpu"]) < 0 else int(row["gpu"])

    def close(self) -> None:
        """Stop the actors (their models go) and Ray where this run started it."""
        with self._lock:
            actors, self._actors = list(self._actors.values()), {}
            started, self._started = self._started, None
            self._ends = None  # it ends with the last task that holds it
        if started is None:
            return
        import ray

        for actor in actors:
            try:
                ray.kill(actor)
            except Exception:
                pass
        if started:
            ray.shutdown()


def _get(ref, should_cancel: Callable[[], bool] | None = None):
    """``ray.get(ref)`` (of a streaming generator: of its next item), checking ``should_cancel``
    while it waits; a user's error inside a Ray error comes out as that error."""
    import ray

    while should_cancel is not None:
        ready, _ = ray.wait([ref], timeout=tuning.DRAFT_AHEAD_WAKE_SECONDS)
        if ready:
            break
        if should_cancel():
            raise CancelledError("cancelled")
    try:
        return ray.get(next(ref) if isinstance(ref, ray.ObjectRefGenerator) else ref)
    except HSDError:
        raise
    except Exception as exc:
        cause = _user_error(exc)
        if cause is not None:
            raise cause from None
        raise HSDError(f"the model actor failed: {_short(exc)}") from exc


@dataclass
class _Returned:
    """A page the actor has decoded: its result came back whole."""

    result: object

    def drafted(self) -> bool:
        return True

    def finish(self):
        return self.result

    result_so_far = finish


@dataclass
class _Waiting:
    """A page whose decode ended on the actor before its drafts came (``core.run.Decoded``): its
    result so far came back; ``finish`` waits for its drafts (the run's drafting thread announces
    them) and asks the actor for the whole result."""

    decoder: "RayPageDecoder"
    page: DraftedPage
    shipped: ShippedPage
    key: str
    so_far: object
    _result: object = None

    def drafted(self) -> bool:
        return self.page.drafts.done()

    def result_so_far(self):
        return self._result if self._result is not None else self.so_far

    def finish(self):
        if self._result is None:
            self.page.drafts.result()
            self._result = self.decoder._finished(self)
        return self._result


class RayPageDecoder:
    """``core.run.PageDecoder`` on a model actor (``ModelActors``, slot ``slot``), for one document's
    run: the run renders each page here and drafts it on the cluster (``drafter``, told the pages
    to draft by ``planned``); ``decode_image`` sends the page to the actor as soon as it is
    rendered, with its drafts where they are in, else with its drafting task's reference (the
    actor's engine takes the drafts while it decodes: ``ModelActor``), tells the page's events as
    they stream back and gives back its result. ``close()`` once the run has ended."""

    def __init__(self, actors: ModelActors, slot: int):
        self.actors, self.slot = actors, slot
        self.config = actors.config
        self._key: str | None = None
        self._remembered: list = []
        self._to_draft: list[int] = []
        self._drafter = None

    def planned(self, plan) -> None:
        """The run's plan (``DocumentPlanned``): the pages it drafts, which the drafter sends ahead."""
        kept = set(plan.kept)
        self._to_draft = [page - 1 for page in plan.pages if page not in kept]

    @cached_property
    def drafter(self):
        """The run's drafter (``config.drafter``) on the cluster's CPUs, built when the run starts:
        a spec that builds no drafter is the run's error, before any task."""
        from core.drafters import get_drafter

        here = get_drafter(self.config.drafter)
        self._drafter = self.actors.drafter(self.config.drafter or tuning.DEFAULT_DRAFTER, here)
        self._drafter.expect(self._to_draft)
        return self._drafter

    def close(self) -> None:
        if self._drafter is not None:
            self._drafter.close()

    @property
    def pages_ahead(self) -> int:
        return max(1, self.actors.options.batch_size)

    @property
    def loaded(self) -> bool:
        return self.actors.loaded(self.slot)

    def prepare(self) -> float:
        self.actors.actor(self.slot)
        return 0.0  # the actor compiles where it loads; its log says how long

    def remember_pages(self, key, results) -> None:
        self._key = str(key)
        self._remembered.extend(results)  # they travel with the document's next page

    def decode_image(self, page: DraftedPage, on_event=None, should_cancel=None) -> "_Returned | _Waiting":
        reference = None
        if not page.drafts.done() and self._drafter is not None:
            reference = self._drafter.reference(page.number)
        if reference is None:  # delivered already, or they cannot travel before they are in
            regions = list(page.drafts.result())
            shipped = ShippedPage(page.number, page.width, page.height, page.image, regions, page.drafts.error,
                                  page.drafts.seconds, dict(page.seconds))
        else:
            shipped = ShippedPage(page.number, page.width, page.height, page.image, [], None, 0.0,
                                  dict(page.seconds), drafts=reference)
        remembered, self._remembered = self._remembered, []
        row = self._decode(self._key, shipped, remembered, page, on_event, should_cancel)
        self.actors.record(row)
        if "so_far" in row:
            return _Waiting(self, page, shipped, self._key, pickle.loads(row["so_far"]))
        return _Returned(self._drafted(page, pickle.loads(row["result"])))

    def _decode(self, key: str, shipped: ShippedPage, remembered: list, page: DraftedPage, on_event,
                should_cancel) -> dict:
        """The actor's last row for ``shipped`` (of document ``key``), its events told on the way.
        A region's events wait until the run has announced the page's regions (``RegionsDrafted``,
        from its drafting thread), as on one machine, where the decode sees no region before."""
        actor = self.actors.actor(self.slot)
        stream = actor.decode.options(num_returns="streaming").remote(key, remembered, shipped)
        while True:
            row = _get(stream, should_cancel)
            if "events" not in row:
                return row
            for event in row["events"]:
                if on_event is not None:
                    if isinstance(event, RegionVerified):
                        page.drafts.result()
                    on_event(event)

    def _drafted(self, page: DraftedPage, result):
        """``result`` with the page's drafting as the run's drafting thread saw it (its error and
        seconds: the actor may have had the drafts from the task only)."""
        page.drafts.result()
        result.stats.draft_error = page.drafts.error
        result.stats.seconds["draft"] = page.drafts.seconds
        return result

    def _finished(self, waiting: _Waiting):
        """The whole result of a page the actor decoded before its drafts came (they have now). An
        actor restarted since has lost the page: it decodes the page again, with its drafts (the
        Markdown is the same; the passes are those of a page drafted first)."""
        page, actor = waiting.page, self.actors.actor(self.slot)
        pickled = _get(actor.finish.remote(waiting.key, page.number))
        if pickled is None:
            shipped = replace(waiting.shipped, drafts=None, regions=list(page.drafts.result()),
                              draft_error=page.drafts.error, draft_seconds=page.drafts.seconds)
            pickled = self._decode(waiting.key, shipped, [], page, None, None)["result"]
        return self._drafted(page, pickle.loads(pickled))


# --- documents in parallel ------------------------------------------------------------------------


class _End:
    """A started run has no more events."""


@dataclass
class _Failed:
    """A started run stopped on ``error``; the reading thread raises it."""

    error: BaseException


class StartedRun:
    """A ``core.run.DocumentRun`` iterated on a thread of ``RayDocuments``: iterate this for its
    events, in order, as the run's own (``request``, ``kept`` and ``converted`` too). ``close()``
    cancels the run where it has not ended and waits for it."""

    def __init__(self, request):
        self.request = request
        self.run = None
        self._events: queue.Queue = queue.Queue()
        self._cancel = threading.Event()
        self._ended = threading.Event()
        self._read_all = False

    @property
    def kept(self) -> list[int]:
        return self.run.kept if self.run is not None else []

    @property
    def converted(self) -> list[int]:
        return self.run.converted if self.run is not None else []

    def execute(self, decoder) -> None:
        """Run the document with ``decoder`` (on a thread of ``RayDocuments``)."""
        from core.run import DocumentRun

        from core.events import DocumentPlanned

        try:
            if not self._cancel.is_set():
                self.run = DocumentRun(self.request, decoder, should_cancel=self._cancel.is_set)
                with self.run:
                    for event in self.run:
                        if isinstance(event, DocumentPlanned):  # before the run drafts anything
                            decoder.planned(event)
                        self._events.put(event)
        except BaseException as exc:  # raised on the reading thread
            self._events.put(_Failed(exc))
        finally:
            decoder.close()
            self._events.put(_End())
            self._ended.set()

    def __iter__(self) -> Iterator[object]:
        return self

    def __next__(self):
        if self._read_all:
            raise StopIteration
        item = self._events.get()
        if isinstance(item, (_End, _Failed)):
            self._read_all = True
            if isinstance(item, _Failed):
                raise item.error
            raise StopIteration
        return item

    def close(self) -> None:
        self._cancel.set()
        self._ended.wait()  # the runs before it have ended: a thread has taken it or takes it now

    def __enter__(self) -> "StartedRun":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class RayDocuments:
    """Documents converted on Ray's model actors: ``runs(requests)`` gives one ``StartedRun`` per
    request, in order; a document runs on each actor at once (a thread per actor takes the next
    document when its last one has ended), so the later ones' events may wait to be read.
    ``close()`` (the ``with`` block's end) cancels what still runs and stops the actors."""

    def __init__(self, config, options: RayOptions | None = None, engine_factory=None):
        self.config, self.options, self.engine_factory = config, options or RayOptions(), engine_factory
        self.actors: ModelActors | None = None
        self._waiting: list[StartedRun] = []
        self._runs: list[StartedRun] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def runs(self, requests) -> list[StartedRun]:
        requests = list(requests)
        self.actors = ModelActors(self.config, self.options, self.engine_factory, len(requests),
                                  on_connect=self._workers)
        self._runs = [StartedRun(request) for request in requests]
        self._waiting = list(self._runs)
        self._workers(1)  # the others once Ray says how many actors there are
        return list(self._runs)

    def _workers(self, count: int) -> None:
        with self._lock:
            while len(self._threads) < count:
                slot = len(self._threads)
                thread = threading.Thread(target=self._work, args=(slot,), name=f"hsd-ray-{slot}", daemon=True)
                self._threads.append(thread)
                thread.start()

    def _work(self, slot: int) -> None:
        while True:
            with self._lock:
                if not self._waiting:
                    return
                run = self._waiting.pop(0)
            run.execute(RayPageDecoder(self.actors, slot))

    def close(self) -> None:
        for run in self._runs:
            run._cancel.set()
        for thread in list(self._threads):
            thread.join()
        if self.actors is not None:
            self.actors.close()

    def __enter__(self) -> "RayDocuments":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def convert_with_ray(inputs, output, config, *, pages: str | None = None, password: str | None = None,
                     fresh: bool = False, options: RayOptions | None = None,
                     engine_factory: Callable | None = None, quiet: bool = True,
                     on_progress: Callable[[Progress], None] | None = None) -> RunReport:
    """Convert ``inputs`` (files or folders) into ``output`` on Ray, from Python: the documents run
    as in ``hsd convert --ray`` (``RayDocuments``); output, resume rules and statistics are those
    of ``hsd convert``. ``config`` is an ``EngineConfig``; ``engine_factory(config) -> Engine``
    replaces ``Engine`` in the actors (tests, custom targets); it must be importable or picklable
    by the workers. ``on_progress`` runs after every page and document; raising from it stops the
    run (finished pages are kept, as after Ctrl-C)."""
    from core.api import ConversionRequest, output_paths
    from core.events import DocumentDone, DocumentPlanned, PageDone
    from core.scale.inputs import expand_inputs

    options = options or RayOptions()
    require_ray()  # before any output folder is touched
    inputs = expand_inputs(inputs)
    requests = [ConversionRequest(path, out, config, pages=pages, password=password, fresh=fresh)
                for path, out in zip(inputs, output_paths(inputs, Path(output)))]
    progress = Progress(documents_total=len(requests))
    documents, failures = [], []
    say = (lambda text: None) if quiet else (lambda text: print(text, file=sys.stderr, flush=True))
    t0 = last = time.perf_counter()
    with RayDocuments(config, options, engine_factory) as ray_documents:
        for run in ray_documents.runs(requests):
            with run:
                try:
                    for event in run:
                        if isinstance(event, DocumentPlanned):
                            progress.pages_total += len(event.to_convert)
                            progress.pages_skipped += len(event.kept)
                            continue
                        if isinstance(event, PageDone):
                            progress.pages_done += 1
                            if event.result.error:
                                progress.pages_failed += 1
                                say(f"hsd: warning: {run.request.input}: page {event.page} failed: "
                                    f"{event.result.error}")
                        elif isinstance(event, DocumentDone):
                            documents.append(event.stats)
                            progress.documents_done += 1
                            say(f"{run.request.input} -> {event.markdown_path}")
                        else:
                            continue
                        now = time.perf_counter()
                        progress.elapsed, progress.actors = now - t0, dict(ray_documents.actors.loads)
                        if on_progress is not None:
                            on_progress(progress)
                        if now - last >= options.progress_every:
                            say(f"hsd: {progress.line()}")
                            last = now
                except (HSDError, OSError) as exc:  # this document: the others go on
                    if isinstance(exc, CancelledError):
                        raise
                    failures.append(DocumentFailure(run.request.input, _message(exc)))
    progress.elapsed = time.perf_counter() - t0
    say(f"hsd: {progress.line()}")
    return RunReport(documents=documents, failures=failures, progress=progress)


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and not isinstance(exc, HSDError):
        return f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc.strerror or exc)
    return str(exc)


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


__all__ = ["RayOptions", "Progress", "RunReport", "DocumentFailure", "ModelActor", "ModelActors", "RayPageDecoder",
           "RayDocuments", "StartedRun", "connect", "convert_with_ray"]
