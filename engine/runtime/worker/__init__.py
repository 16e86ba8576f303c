"""The engine worker: a process of its own that holds the models and runs every measured forward pass.

    python -m engine worker --token-file PATH        start one (engine/cli/worker.py; docs/worker.md)
    python -m engine.runtime.worker ...              the same, as the app's local worker starts it

    server.py    the worker: connections, the queue, one measured run at a time
    jobs.py      what each call runs (the engine's own functions) and its plain-JSON result
    models.py    the models a client may name, loaded and warmed per (choice, device, dtype)

Its client and protocol are engine/contract/worker/ (no torch).
"""
