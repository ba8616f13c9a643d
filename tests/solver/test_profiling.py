"""Stage timers: exclusive accounting of nested stages, on a fake clock."""

from solver import profiling
from solver.profiling import NullTimers, Timers


def test_nested_stages_are_exclusive(monkeypatch):
    clock = iter([0.0, 1.0, 3.0, 6.0, 10.0, 11.0])
    monkeypatch.setattr(profiling.time, "perf_counter", lambda: next(clock))
    t = Timers()
    with t("step_setup"):  # enters at 0
        with t("broad_phase"):  # 1 .. 3
            pass
        with t("broad_phase"):  # 6 .. 10 (outer runs 0..1 and 3..6, then 10..11)
            pass
    assert t.seconds["broad_phase"] == 6.0
    assert t.seconds["step_setup"] == 5.0
    assert t.calls["broad_phase"] == 2 and t.calls["step_setup"] == 1
    report = t.report(total=20.0)
    assert report["other"] == 9.0 and set(profiling.STAGES) <= set(report)


def test_null_timers_record_nothing_and_do_not_swallow_errors():
    t = NullTimers()
    try:
        with t("elasticity"):
            raise KeyError("boom")
    except KeyError:
        pass
    else:
        raise AssertionError("exception swallowed")
    assert not t.seconds
