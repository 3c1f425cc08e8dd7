"""``core.commands.arguments``: the checks every sub-command runs before any work, one line each."""

from __future__ import annotations

import argparse
import io
from types import SimpleNamespace

import pytest

from core.commands import arguments
from core.errors import HSDError


def test_whole_numbers_inside_their_bounds_only():
    parse = arguments.whole_number(1, 10, "--pages-at-once")
    assert parse("1") == 1 and parse("10") == 10
    for bad, message in (("0", "between 1 and 10, got 0"), ("11", "got 11"), ("2.5", "whole number"),
                         ("x", "whole number")):
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            parse(bad)


def test_dpi_is_a_readable_resolution():
    assert arguments.dpi_value("144") == 144
    for bad in ("0", "-5", "35", "1201"):
        with pytest.raises(argparse.ArgumentTypeError, match="dpi must be between 36 and 1200"):
            arguments.dpi_value(bad)


def test_tau_is_above_zero_and_at_most_one():
    assert arguments.threshold("1") == 1.0 and arguments.threshold("0.5") == 0.5
    for bad in ("0", "1.01", "-1", "nan", "inf", "one"):
        with pytest.raises(argparse.ArgumentTypeError):
            arguments.threshold(bad)


def test_devices_are_spelled_as_torch_spells_them():
    for good in ("cpu", "cuda", "cuda:1", "mps", "xpu:0"):
        assert arguments.device_name(good) == good
    for bad in ("gpu", "cuda:", "cuda:1;rm -rf ~", "CUDA", "cuda:1234"):
        with pytest.raises(argparse.ArgumentTypeError, match="is not a device"):
            arguments.device_name(bad)
    with pytest.raises(argparse.ArgumentTypeError, match=r"'\\x1b"):  # unprintable: shown escaped
        arguments.device_name("\x1b[2J")


def test_cpu_and_no_device_need_no_check():
    arguments.device_present(None)
    arguments.device_present("cpu")


def test_a_device_this_machine_lacks_is_one_line(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(HSDError, match="no usable CUDA device"):
        arguments.device_present("cuda:0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    arguments.device_present("cuda:1")
    with pytest.raises(HSDError, match=r"has 2 CUDA devices \(cuda:0 to cuda:1\)"):
        arguments.device_present("cuda:2")


def test_the_password_comes_from_the_flag_then_the_environment_then_the_prompt(monkeypatch):
    monkeypatch.setenv(arguments.PASSWORD_ENV, "from-env")
    args = SimpleNamespace(password="from-flag", ask_password=False)
    arguments.resolve_password(args)
    assert args.password == "from-flag"
    args = SimpleNamespace(password=None, ask_password=False)
    arguments.resolve_password(args)
    assert args.password == "from-env"
    monkeypatch.setattr("sys.stdin", io.StringIO("typed\n"))  # not a terminal: one line is read
    args = SimpleNamespace(password=None, ask_password=True)
    arguments.resolve_password(args)
    assert args.password == "typed"
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    with pytest.raises(HSDError, match="nothing to read"):
        arguments.resolve_password(SimpleNamespace(password=None, ask_password=True))
