"""Fixtures shared by every test package: the tiny models of the real architectures, each built,
saved and loaded back through ``from_pretrained`` once per session."""

from __future__ import annotations

import os

# One intra-op thread: the tiny models' passes are too small to split, and a second thread only
# spins (on two shared cores it doubled the suite's CPU time). Set before anything imports torch;
# subprocesses the tests start inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402

from core.targets import loader  # noqa: E402

_real_load_target = loader.load_target
_LOADED: dict = {}


def load_target_once(name, device=None, dtype=None, trust_remote_code=False):
    """``load_target`` that loads each (model, device, dtype) once per session: the suite converts
    many times and loading is not what those tests test (a failed load is never cached). Tests
    that change a target's weights load their own copy with ``load_target``."""
    key = (str(name), device, dtype, trust_remote_code)
    if key not in _LOADED:
        _LOADED[key] = _real_load_target(name, device=device, dtype=dtype, trust_remote_code=trust_remote_code)
    return _LOADED[key]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """With the tests split over processes (pytest-xdist, ``-n``), every test of the local Ray
    instance runs in one process: one Ray instance is started once (seconds), never twice at once."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if "ray_local" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("ray"))


@pytest.fixture(autouse=True)
def shared_targets_left_as_loaded(monkeypatch):
    """After each test, no target shared by the session keeps a method of its own: a test that
    patched one with ``monkeypatch.setattr(target, ...)`` leaves the old bound method on the
    instance, which hides every later test's patch of the class (``Target.forward``) whatever the
    order the tests run in. Patch an instance with ``monkeypatch.setitem(vars(target), ...)``."""
    yield
    monkeypatch.undo()  # the test's patches, undone now rather than after this check
    for target in _LOADED.values():
        kept = sorted(name for name in vars(target) if callable(getattr(type(target), name, None)))
        assert not kept, f"a shared target keeps its own {kept}: patch it with setitem(vars(target), ...)"


@pytest.fixture(autouse=True)
def cycles_collected_on_the_gui_thread(request):
    """A Qt test collects Python's reference cycles on its own thread only, as the app does
    (``app.main.application``): a widget freed by a collection on a conversion's thread hangs or
    crashes the test process. After the test (its widgets closed), one collection here frees what it
    left in cycles, so that no later test's thread meets one of its widgets."""
    if "qapp" not in request.fixturenames or request.node.get_closest_marker("own_cycle_collection"):
        yield
        return
    from app.cycle_collector import GuiThreadCollector

    request.getfixturevalue("qapp")
    collector = GuiThreadCollector()
    collector.start()
    yield
    collector.stop()


@pytest.fixture
def no_cycle_collection():
    """Python's cycle collection off for the test (what it leaves in cycles is collected after):
    an object the test drops is freed then only if no reference cycle holds it."""
    import gc

    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    yield
    if was_enabled:
        gc.enable()
    gc.collect()


@pytest.fixture(autouse=True)
def drafting_in_this_process(request, monkeypatch):
    """Document runs draft in the test's own process, where a test can patch a drafter (a crash, a
    warning, extra regions): a drafting process builds its own, unpatched. Tests marked
    ``drafting_process`` draft as users' runs do; so do the ``hsd`` commands the tests start."""
    if request.node.get_closest_marker("drafting_process") is None:
        from core import tuning

        monkeypatch.setattr(tuning, "DRAFTING_PROCESS", False)


@pytest.fixture
def shared_model_loads(monkeypatch):
    """Engines built in this test (the CLI's, the API's) load their model through ``load_target_once``."""
    monkeypatch.setattr(loader, "load_target", load_target_once)


@pytest.fixture(scope="session")
def tiny_target_dir(tmp_path_factory):
    """Factory: ``tiny_target_dir(arch)`` -> folder of a tiny random model of that family (built once per session).

    The folder loads with ``core.targets.load_target`` exactly like a hub model.
    """
    from core.targets.tiny import build_tiny_model

    built: dict[str, object] = {}

    def get(arch: str):
        if arch not in built:
            built[arch] = build_tiny_model(tmp_path_factory.mktemp(f"tiny-{arch}"), arch, seed=0)
        return built[arch]

    return get


@pytest.fixture(scope="session")
def tiny_target(tiny_target_dir):
    """Factory: ``tiny_target(arch)`` -> a ``Target`` loaded from the tiny model folder through
    ``from_pretrained`` (once per session, shared with ``load_target_once``)."""
    return lambda arch: load_target_once(str(tiny_target_dir(arch)), device="cpu")
