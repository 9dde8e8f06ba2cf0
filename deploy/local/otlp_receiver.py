#!/usr/bin/env python3
"""A small OpenTelemetry OTLP/HTTP trace receiver for the end-to-end tests.

Usage: otlp_receiver.py --port PORT --out FILE (PORT 0 picks a free port; it needs the
opentelemetry-proto that deploy/local/setup installs). A test starts it, reads `listening on
127.0.0.1:<port>` from its stdout, sets OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:<port> for each
process, and then reads FILE to check that the spans of several processes chain into one trace. It
takes POST /v1/traces as application/x-protobuf (gzip too) or application/json and appends to FILE
one JSON object a line per span: trace_id, span_id, parent_span_id ("" when none), name, kind,
service, attributes, links, status, start_unix_nano, end_unix_nano. SIGTERM or SIGINT stops it.
"""
import argparse
import base64
import gzip
import json
import re
import signal
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format, text_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status


def _hex_ids_to_base64(obj):
    """OTLP/JSON writes trace and span ids in hex, protobuf's JSON mapping reads bytes as base64
    (an 8- or 16-byte id in base64 is 12 or 24 characters, never 16 or 32 hex digits)."""
    for key in ("traceId", "spanId", "parentSpanId"):
        if isinstance(obj.get(key), str) and re.fullmatch(r"(?:[0-9a-fA-F]{16}){1,2}", obj[key]):
            obj[key] = base64.b64encode(bytes.fromhex(obj[key])).decode()
    return obj


def _value(any_value):
    which = any_value.WhichOneof("value")
    if which in ("string_value", "bool_value", "int_value", "double_value"):
        return getattr(any_value, which)
    if which == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    if which == "bytes_value":
        return any_value.bytes_value.hex()
    return text_format.MessageToString(any_value.kvlist_value, as_one_line=True) if which else ""


def _records(request):
    for resource_spans in request.resource_spans:
        resource = {kv.key: _value(kv.value) for kv in resource_spans.resource.attributes}
        service = str(resource.get("service.name", ""))
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield {
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "name": span.name,
                    "kind": Span.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_").lower(),
                    "service": service,
                    "attributes": {kv.key: _value(kv.value) for kv in span.attributes},
                    "links": [{"trace_id": ln.trace_id.hex(), "span_id": ln.span_id.hex()} for ln in span.links],
                    "status": Status.StatusCode.Name(span.status.code).removeprefix("STATUS_CODE_").lower(),
                    "start_unix_nano": span.start_time_unix_nano,
                    "end_unix_nano": span.end_time_unix_nano,
                }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # exporters keep their connection open between batches
    out = None  # FILE, opened by main
    lock = threading.Lock()

    def log_message(self, format, *args):  # nothing per request; errors go through log_error
        pass

    def log_error(self, format, *args):
        sys.stderr.write(f"otlp_receiver: {format % args}\n")

    def _reply(self, code, body, content_type):
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self):
        if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0], 16):
            chunks.append(self.rfile.read(size + 2)[:-2])  # a chunk and its CRLF
        self.rfile.readline()  # the blank line after the last chunk (exporters send no trailers)
        return b"".join(chunks)

    def do_POST(self):
        body = self._body()
        if self.path.split("?")[0] != "/v1/traces":
            return self._reply(404, b"not found\n", "text/plain")
        content_type = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if content_type not in ("application/x-protobuf", "application/json"):
            return self._reply(415, b"unsupported content type\n", "text/plain")
        try:
            if self.headers.get("Content-Encoding", "").strip().lower() == "gzip":
                body = gzip.decompress(body)
            request = trace_service_pb2.ExportTraceServiceRequest()
            if content_type == "application/json":
                document = json.loads(body, object_hook=_hex_ids_to_base64)
                json_format.Parse(json.dumps(document), request, ignore_unknown_fields=True)
                response = json_format.MessageToJson(trace_service_pb2.ExportTraceServiceResponse()).encode()
            else:
                request.ParseFromString(body)
                response = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            lines = "".join(json.dumps(r) + "\n" for r in _records(request))
        except (ValueError, TypeError, AttributeError, OSError, EOFError, zlib.error,
                DecodeError, json_format.ParseError) as error:
            self.log_error("undecodable %s body: %s", content_type, error)
            return self._reply(400, f"undecodable body: {error}\n".encode(), "text/plain")
        with self.lock:
            self.out.write(lines)
            self.out.flush()
        self._reply(200, response, content_type)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="port to bind; 0 picks a free one")
    parser.add_argument("--out", required=True, help="JSON-lines file the spans are appended to")
    args = parser.parse_args()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: sys.exit(0))
    with open(args.out, "a", encoding="utf-8") as out, \
            ThreadingHTTPServer(("127.0.0.1", args.port), Handler) as server:
        Handler.out = out
        print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
        server.serve_forever()


if __name__ == "__main__":
    main()
