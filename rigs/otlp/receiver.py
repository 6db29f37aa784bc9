"""A real OTLP/HTTP receiver for the tests: oteltest's HttpSink (PyPI), which decodes each
export with opentelemetry-proto. Each export it takes is written as one JSON line to OUT:
the resource's attributes and, by metric name, each data point's time and value.

    receiver.py PORT OUT      (runs until SIGTERM; `scripts/setup` makes its venv)
"""
import json
import logging
import signal
import sys
import threading
import time

from oteltest.sink import HttpSink
from oteltest.sink.handler import RequestHandler


def value(point):
    kind = point.WhichOneof("value") if hasattr(point, "WhichOneof") else None
    if kind == "as_int":
        return point.as_int
    if kind == "as_double":
        return point.as_double
    return None


class Writer(RequestHandler):
    def __init__(self, out):
        self.out = out
        self.lock = threading.Lock()

    def handle_metrics(self, request, headers):
        for rm in request.resource_metrics:
            resource = {a.key: a.value.string_value for a in rm.resource.attributes}
            metrics = {}
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    kind = m.WhichOneof("data")
                    points = getattr(m, kind).data_points
                    metrics[m.name] = [
                        {"time": p.time_unix_nano, "value": value(p) if kind in ("sum", "gauge") else p.count}
                        for p in points
                    ]
            line = json.dumps({"received": time.time(), "resource": resource, "metrics": metrics})
            with self.lock:
                self.out.write(line + "\n")
                self.out.flush()

    def handle_trace(self, request, headers):
        pass

    def handle_logs(self, request, headers):
        pass


def main():
    port, path = int(sys.argv[1]), sys.argv[2]
    logger = logging.getLogger("receiver")
    with open(path, "a") as out:
        sink = HttpSink(Writer(out), logger, port=port, daemon=True)
        sink.start()
        print("listening", port, flush=True)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        stop.wait()
        sink.stop()


if __name__ == "__main__":
    main()
