import Foundation
import PipelineTracing
import Testing

@testable import IngestService

/// What ingest repeats from a request: the request id and the trace context, only in safe forms.
@Suite("request ids and trace context")
struct RequestHeaderTests {
    @Test("X-Request-Id is kept only as 1–128 of A-Z a-z 0-9 . _ : -")
    func requestIDs() {
        for safe in ["a", "req-1", "abc:DEF_1.2-3", String(repeating: "x", count: 128), "00-0af7651916cd43dd"] {
            #expect(RequestID.accepted(safe) == safe)
        }
        for unsafe in ["", "a b", #"quote"and\backslash"#, "line\nbreak", String(repeating: "x", count: 129), "ü", "a/b", "{json}"] {
            let replaced = RequestID.accepted(unsafe)
            #expect(replaced != unsafe)
            #expect(UUID(uuidString: replaced) != nil)
        }
        #expect(UUID(uuidString: RequestID.accepted(nil)) != nil)
    }

    @Test("traceparent is carried only when W3C allows continuing it")
    func traceparent() {
        #expect(TraceHeader.validTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01") != nil)
        for refused in [
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",  // no flags
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",  // uppercase
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\nX: y",  // header injection
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",  // version ff is invalid
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",  // all-zero trace ID
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",  // all-zero parent ID
            "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",  // bad hex
            "00_0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331_01",  // bad delimiters
        ] {
            #expect(TraceHeader.validTraceparent(refused) == nil, "\(refused)")
        }
        #expect(TraceHeader.validTracestate("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7") != nil)
        #expect(TraceHeader.validTracestate("not a list member") == nil)
    }
}
