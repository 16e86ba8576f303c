"""The engine worker: a process of its own that holds the models and runs every measured forward pass.

    python -m engine worker --token-file PATH        start one (engine/cli/worker.py; docs/worker.md)
    EngineClient.from_env()                          the page's side: local (started here) or remote

    protocol.py  the messages (JSON, versioned) over multiprocessing.connection, the key challenge
    server.py    the worker: connections, the FIFO queue, one measured run at a time
    jobs.py      what each call runs (the engine's own functions) and its plain-JSON result
    models.py    the models a client may name, loaded and warmed per (choice, device, dtype)
    client.py    EngineClient: the calls, events, results rebuilt as the engine's types
    local.py     a local worker started and watched by the app (the key through its stdin)
    errors.py    what can go wrong between the two, and engine errors across the wire
    codec.py     the engine's result dataclasses as JSON and back

Nothing here is imported by `import engine`; the client pulls in the engine's result types only.
"""
