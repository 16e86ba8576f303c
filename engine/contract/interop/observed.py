"""A serving run observed from outside a server (a client's probe, a vLLM result file).

The server's passes are not visible from there, so the run has no iterations, its settings name
OBSERVED_POLICY, and its block size and KV blocks are placeholders the record requires; the metrics
are the in-process engine's own (engine/contract/serving/metrics.py), so every serving figure applies unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.contract.serving.metrics import compute_kv_memory, compute_serving_metrics
from engine.contract.serving.trace import OBSERVED_POLICY, SLO, KVMemory, RequestRecord, ServingRun, ServingSettings
from engine.contract.trace import ModelInfo

OBSERVED_NOTE = "observed from the client: no view inside the server's passes"


def observed_model(model_id: str, architecture: str, device: str) -> ModelInfo:
    """A ModelInfo that names the model and where it ran; its shape is unknown from outside (zeros)."""
    return ModelInfo(model_id=model_id, architecture=architecture, num_layers=0, num_heads=0, num_kv_heads=0,
                     head_dim=0, hidden_size=0, vocab_size=0, max_positions=0, num_params=0, dtype="unknown",
                     bytes_per_element=0, device=device)


def observed_run(scenario: str, model: ModelInfo, records: Sequence[RequestRecord], *, wall_ms: float,
                 notes: Sequence[str], slo: SLO = SLO()) -> ServingRun:
    """The ServingRun of `records` as a client saw them: no iterations, placeholder KV settings."""
    memory = compute_kv_memory((), records, 1, 0) if records else KVMemory(1, 0, 0, 0, 0, 0, 0.0, 0.0)
    settings = ServingSettings(policy=OBSERVED_POLICY, block_size=1, num_kv_blocks=1)
    return ServingRun(scenario=scenario, settings=settings, model=model, requests=tuple(records), iterations=(),
                      metrics=compute_serving_metrics(records, slo), memory=memory, wall_ms=wall_ms,
                      notes=tuple(notes))
