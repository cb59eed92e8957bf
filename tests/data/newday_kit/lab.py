"""Round robin against least connections, under a slow backend."""

from labkit import figure, given, table

clients = given("clients", 20, "count", about="clients the load generator runs at once")
given("probe_interval", 200, "ms", about="how often the balancer probes each backend", label="Probe every")
figure("rr_failed", 4, "count", about="requests that failed under round robin", label="Round robin, failed")
figure(
    "lc_failed", 1, "count", about="requests that failed under least connections", label="Least conn, failed"
)
figure("page_cache", 8.192, "MB", about="page cache the backends used", label="Page cache")
table(
    "latency",
    {"strategy": "text", "p50": "ms", "p99": "ms"},
    [["round robin", 12.5, 80.1], ["least conn", 9.8, 31.4]],
)
print("strategy     p50 ms   p99 ms")
print("round robin  12.5     80.1")
print("least conn   9.8      31.4")
