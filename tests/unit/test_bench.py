"""The benchmark keeps working: `python3 build.py bench` is not part of CI, so these run the
benchmark's CPython-side measurements (and load every metric module) with the suite."""

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

run = pytest.importorskip("run", reason="the benchmark needs playwright (build.py test installs it)")


def test_every_metric_module_loads_and_is_listed():
    names = [metric.__name__ for metric in run.all_metrics()]
    assert {
        "cold_start",
        "warm_round_trip",
        "first_paint_200",
        "request_bytes_ratio",
        "bound_in_browser",
        "search_and_open",
        "save_8mb",
        "attach_page",
        "tab_event_wakes",
    } <= set(names)


def test_request_bytes_rows_are_measured_from_the_real_request_builder():
    import bench_images

    rows = [run.Result(**row) for row in bench_images.request_bytes_ratio(grid=((10, 1),))]
    assert len(rows) == 1 and rows[0].unit == "x"
    assert 1.0 < rows[0].value < 1.05  # a placeholder costs a little; pixels would be ~100x


def test_slimming_rows_are_measured_without_a_browser_and_meet_the_prefix_goal():
    import bench_slimming

    assert bench_slimming.slimming_requests in run.browserless_metrics()
    ratio, share_all, share_after_breaks = (run.Result(**row) for row in bench_slimming.slimming_requests())
    assert 0.4 < ratio.value < 0.6  # three 50 K pages: each sent whole only until it turns cold
    assert share_all.value < 100.0  # the two one-time breaks
    assert share_after_breaks.value == 100.0 and share_after_breaks.passed
