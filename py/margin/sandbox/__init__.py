"""The `run_python` tool, sans-IO: code runs kept with their answer, tool rounds, one turn's calls."""
