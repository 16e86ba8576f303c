"""The engine worker's contract: what a client needs to talk to it, without torch.

    protocol.py  the messages (JSON, versioned) over multiprocessing.connection, the key challenge
    calls.py     the kinds of call, one table the worker and the client share (lane, sharing, result type)
    client.py    EngineClient: the calls, events, results rebuilt as the engine's types
    codec.py     the engine's result dataclasses as JSON and back
    errors.py    what can go wrong between the two, and engine errors across the wire
    local.py     a local worker started and watched by the app (the key through its stdin)

The worker itself (its server, jobs and models) is engine/runtime/worker/.
"""
