"""A serving run as plain values: its record (trace.py), vLLM's metrics over it (metrics.py) and who
arrives when with which prompt (workloads.py; example_workload.jsonl). The engine that runs it is
engine/runtime/serving/.
"""
