"""Busy work beside a benchmark (``core.bench.busy``, ``hsd bench --busy``): spinning processes that
run while the timed runs do and are gone after them, whatever ends the run."""

import json
import multiprocessing
import os

import pytest

import core.bench.runner as runner
from core.bench.busy import busy_processes, load_average, spin
from core.bench.runner import BenchConfig, run_bench
from core.cli import main


def _busy_children() -> list:
    return [p for p in multiprocessing.active_children() if p.name == "hsd-bench-busy"]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_processes_spin_during_the_block_and_are_gone_after_it():
    with busy_processes(2) as processes:
        assert len(processes) == 2 and all(p.is_alive() for p in processes)
        assert {p.pid for p in _busy_children()} == {p.pid for p in processes}
        pids = [p.pid for p in processes]
    assert not _busy_children() and all(_gone(pid) for pid in pids)


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_an_error_or_ctrl_c_inside_the_block_stops_them_too(error):
    pids = []
    with pytest.raises(error):
        with busy_processes(1) as processes:
            pids = [p.pid for p in processes]
            assert _busy_children()
            raise error()
    assert pids and not _busy_children() and all(_gone(pid) for pid in pids)


def test_none_asked_none_started():
    with busy_processes(0) as processes:
        assert processes == [] and not _busy_children()


def test_a_spinning_process_leaves_once_its_parent_is_gone():
    """A parent killed outright runs no cleanup: the spinner sees another parent and returns."""
    spin(parent=-1)  # not this process's parent: returns after its first look instead of spinning on


def test_the_load_average_is_three_figures():
    load = load_average()
    assert load is None or (len(load) == 3 and all(x >= 0 for x in load))


def test_bench_records_the_busy_processes_and_stops_them_after_the_run(synthetic_corpus, tmp_path, capsys,
                                                                       monkeypatch):
    out = tmp_path / "busy"
    seen = []
    real = runner._run_document

    def run_document(*args, **kwargs):
        seen.append(len(_busy_children()))  # spinning while the timed runs run
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "_run_document", run_document)
    rc = main(["bench", str(synthetic_corpus), "--busy", "1", "--methods", "ar,hsd", "--drafter", "textlayer",
               "--tokenizer", "tiny", "--out", str(out), "-q"])
    assert rc == 0 and seen == [1, 1]
    assert not _busy_children()
    data = json.loads((out / "bench.json").read_text())
    assert data["info"]["busy"] == 1 and data["config"]["busy"] == 1
    load = data["info"]["load_average"]
    assert set(load) == {"start", "end", "documents"} and set(load["documents"]) == {"alpha_report", "beta_note"}
    assert "busy 1: 1 process spinning at the normal priority" in (out / "report.md").read_text()
    assert "busy 1:" in capsys.readouterr().out


def test_busy_processes_are_stopped_when_the_run_fails(synthetic_corpus, monkeypatch):
    seen = []

    def fail(*args, **kwargs):
        seen.append(len(_busy_children()))
        raise RuntimeError("a method's run failed")

    monkeypatch.setattr(runner, "_run_document", fail)
    with pytest.raises(RuntimeError):
        run_bench(BenchConfig(corpus=str(synthetic_corpus), methods="hsd", tokenizer="tiny", busy=2),
                  log=lambda s: None)
    assert seen == [2] and not _busy_children()


def test_an_idle_run_says_so_and_a_negative_count_is_one_line(synthetic_corpus, tmp_path, capsys):
    result = run_bench(BenchConfig(corpus=str(synthetic_corpus), methods="hsd", docs=["beta"], drafter="textlayer",
                                   tokenizer="tiny"), log=lambda s: None)
    assert result["info"]["busy"] == 0
    with pytest.raises(SystemExit) as exit_:
        main(["bench", str(synthetic_corpus), "--busy", "-1", "--out", str(tmp_path / "o")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--busy" in err and "Traceback" not in err
