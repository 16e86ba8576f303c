"""The benchmarks: each a module run from the repository root as `python -m bench.NAME` (docs/benchmarks.md),
so the repository's packages import as they do for the app and the tests, and nothing edits sys.path.
bench/app_server.py is the one helper, shared with the browser tests."""
