import Foundation
import TestSupport

extension PipelineUnderTest {
    /// Starts a second instance of `stage` (`<stage>-2`, on a port of its own) and waits until it is
    /// ready: a consuming stage's group then shares the input's partitions between the two, and a
    /// second ingest takes the requests sent to its port.
    func launchReplica(_ stage: Stage) async throws {
        let name = "\(stage.rawValue)-2"
        var environment = environments[stage.rawValue]!
        environment["HTTP_PORT"] = "\(LocalHTTP.freePort())"
        environments[name] = environment
        ports[name] = Int(environment["HTTP_PORT"]!)
        try await launch(name, executable: stage.rawValue)
        try await LocalHTTP.waitForPort(ports[name]!, timeout: .seconds(120))
        let deadline = ContinuousClock.now + .seconds(90)
        while (try? await status("http://127.0.0.1:\(ports[name]!)/ready")) != 200 {
            guard ContinuousClock.now < deadline else { throw TestSupportError("\(name) is not ready after 90 s") }
            try await Task.sleep(for: .milliseconds(250))
        }
    }
}
