"""When the panel warms the code sandbox (extension/panel/sandbox_warmup.js), run in node: the
model "may run Python" exactly when margin.sandbox.tool_loop would offer it the tool, and a block's
imports are the modules Python would import (what the sandbox then loads ahead of the Run)."""

import ast
from pathlib import Path

import pytest
from helpers import run_js_module

from margin.sandbox.tool_loop import DEFAULT_MODE, MODES, TOOL_PROVIDER_TYPES, offers_tools

MODULE = Path(__file__).resolve().parents[2] / "extension" / "panel" / "sandbox_warmup.js"

MAY_RUN = """
const out = input.cases.map(([mode, provider]) => warmup.mayRunPython(mode, provider, input.types));
console.log(JSON.stringify(out));
"""

IMPORTS = """
console.log(JSON.stringify(input.map((code) => [warmup.importedModules(code), warmup.prepareCode(warmup.importedModules(code))])));
"""


def test_the_model_may_run_python_exactly_when_python_would_offer_it_the_tool(tmp_path: Path):
    providers = [
        {"type": "openai"},
        {"type": "anthropic", "supportsTools": True},
        {"type": "gemini", "supportsTools": False},
        {"type": "openai-responses"},
        {"type": "ollama"},
        {},
    ]
    cases = [[mode, provider] for mode in [*MODES, "nonsense"] for provider in providers]
    got = run_js_module(
        tmp_path, MODULE, "warmup", MAY_RUN, {"cases": cases, "types": list(TOOL_PROVIDER_TYPES)}
    )
    # A stored mode Python does not know reads as its default (DEFAULT_MODE).
    expected = [offers_tools(mode if mode in MODES else DEFAULT_MODE, provider) for mode, provider in cases]
    assert got == expected
    assert any(got) and not all(got)
    assert run_js_module(tmp_path, MODULE, "warmup", MAY_RUN, {"cases": [["ask", None]], "types": []}) == [
        False
    ]


def python_modules(code: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


BLOCKS = [
    "import pandas as pd\nimport matplotlib.pyplot as plt\n",
    "from matplotlib import pyplot as plt, cm\nimport numpy as np, scipy.stats\n",
    "    import json  # indented, in a function\nfrom . import sibling\nfrom .pkg import x\n",
    "print('no imports here')\nx = 'import nothing'\n",
    "import os.path, sys as system; print(1)\n",
]


@pytest.mark.parametrize("code", BLOCKS)
def test_a_blocks_imports_are_the_top_level_modules_python_would_import(tmp_path: Path, code: str):
    source = code if not code.startswith(" ") else "def f():\n" + code.splitlines()[0] + "\n"
    ((modules, prepare),) = run_js_module(tmp_path, MODULE, "warmup", IMPORTS, [code])
    assert set(modules) == python_modules(source)
    assert len(modules) == len(set(modules))
    # What the sandbox is sent imports exactly those modules, one line each.
    assert python_modules(prepare) == set(modules) if modules else prepare == ""


def test_a_block_of_endless_imports_sends_a_bounded_list(tmp_path: Path):
    code = "".join(f"import module_{n}\n" for n in range(500)) + "import 1bad, ok.sub\n"
    ((modules, _prepare),) = run_js_module(tmp_path, MODULE, "warmup", IMPORTS, [code])
    assert modules == [f"module_{n}" for n in range(32)]
