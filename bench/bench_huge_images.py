"""Huge images under CPython (issue 11, finding 6): peak memory and time to refuse a 10,000 x
10,000 PNG (over the 50 MP cap) and to thumbnail a 7,000 x 7,000 PNG and JPEG, each in a fresh
process. Browserless (in run.py's `BROWSERLESS_METRICS`); run alone:
`python3 bench/run.py --only huge_images_in_cpython`.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_result import python_child, result

REPO = Path(__file__).resolve().parents[1]

# One huge image per fresh process: the file is made by a first child (its allocations would hide
# the figure), then each operation runs in a child of its own that reports its peak RSS (ru_maxrss)
# over its baseline (Pillow imported, the file's bytes read) and its time.
_MAKE_CHILD = r"""
import sys
from PIL import Image
side, fmt, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
image = Image.linear_gradient("L").resize((side, side)).convert("RGB")
image.save(path, fmt, **({"quality": 90} if fmt == "JPEG" else {"compress_level": 1}))
"""
_HUGE_CHILD = r"""
import io, json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from PIL import Image
from margin.images import codec as image_codec
data = open(sys.argv[2], "rb").read()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
try:
    thumb = image_codec.downscale(data, 512)  # its width and height are the source's
    made = Image.open(io.BytesIO(thumb.data)).size
    outcome = "thumbnail %dx%d of %dx%d" % (*made, thumb.width, thumb.height)
except image_codec.CodecError as error:
    outcome = "refused: " + error.kind
ms = (time.perf_counter() - started) * 1000
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"ms": ms, "mb": (peak - base) / 1024, "outcome": outcome}))
"""
HUGE_CASES = (
    (10_000, "PNG", "refused: too_large"),
    (7_000, "PNG", "thumbnail"),
    (7_000, "JPEG", "thumbnail"),
)


def huge_images_in_cpython(bench: Any = None) -> list[dict[str, Any]]:
    """Peak memory and time to bound or refuse one huge image (issue 11, finding 6: before the cap
    a 10,000 x 10,000 PNG took 962 MB and 7 s). Each operation must end as HUGE_CASES says."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="margin-bench-") as tmp:
        for side, fmt, expected in HUGE_CASES:
            path = Path(tmp) / f"{side}.{fmt.lower()}"
            subprocess.run(
                [sys.executable, "-c", _MAKE_CHILD, str(side), fmt, str(path)], check=True, timeout=600
            )
            out = python_child(_HUGE_CHILD, str(REPO / "py"), str(path), what="the huge-image child")
            if not out["outcome"].startswith(expected):
                raise RuntimeError(f"{side} px {fmt}: expected {expected}, got {out['outcome']}")
            label = f"{side:,} x {side:,} {fmt} ({side * side / 1e6:g} MP): {out['outcome']}"
            note = f"{path.stat().st_size / 1e6:.1f} MB file; CPython {sys.version.split()[0]}"
            rows.append(result(f"{label}, peak memory", round(out["mb"], 1), "MB", note=note))
            rows.append(result(f"{label}, time", round(out["ms"], 1), "ms", note=note))
    return rows


METRICS = [huge_images_in_cpython]
BROWSERLESS_METRICS = [huge_images_in_cpython]
