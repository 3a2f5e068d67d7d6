"""Small helpers shared by the unit tests."""

import asyncio
import base64
import hashlib
import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any


def run(coro):
    return asyncio.run(coro)


def run_js_module(
    tmp_path: Path,
    module: Path,
    alias: str,
    script: str,
    data: Any,
    extra_files: dict[str, str] | None = None,
) -> Any:
    """Run `script` in node with `module` imported as `alias` and `input` = `data`; returns what
    the script printed as JSON. Node is part of the test environment: without it this fails."""
    node = shutil.which("node")
    assert node, "node is not installed: it is part of the test environment (apt-get install nodejs)"
    (tmp_path / f"{alias}.mjs").write_text(module.read_text(encoding="utf-8"), encoding="utf-8")
    for relative, text in (extra_files or {}).items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text, encoding="utf-8")
    (tmp_path / "input.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    runner = tmp_path / "run.mjs"
    runner.write_text(
        f"import fs from 'fs';\nimport * as {alias} from './{alias}.mjs';\n"
        "const input = JSON.parse(fs.readFileSync(new URL('./input.json', import.meta.url), 'utf8'));\n"
        + script,
        encoding="utf-8",
    )
    done = subprocess.run([node, str(runner)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# -- the build's tests: fake npm tarballs and a network that must not be used ---------------------


def no_network(*args, **kwargs):
    raise AssertionError(f"the build went to the network: {args[:1]}")


def make_tgz(files: dict[str, bytes]) -> bytes:
    """An npm tarball (`package/<name>` entries) holding `files`."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def sri(data: bytes) -> str:
    """The lock file's `integrity` for `data`."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
